"""Which agents a notebook has, from its tapes: those its own tape defines (``agent`` events), and ``<tape>~<name>``
tapes that hold a handoff between agents."""

from __future__ import annotations

import functools
from collections.abc import Callable, Container
from typing import Any

from bub_nb.tape.events import AGENT, CONTEXT_HANDOFF
from bub_nb.tape.names import AGENT_MARK, agent_of_tape, notebook_of_tape
from bub_nb.tape.stores.protocol import SearchesLines, TapeStore


def defined_agents(store: TapeStore, notebook: str) -> dict[str, dict[str, Any]]:
    """The agents the notebook's tape ``notebook`` defines, in the order they were first defined, each with the
    settings its newest ``agent`` event records."""
    found: dict[str, dict[str, Any]] = {}
    for entry in reversed(list(_events(store, notebook, AGENT))):  # oldest first: a later definition wins
        data = entry.payload.get("data")
        if isinstance(data, dict) and isinstance(data.get("name"), str):
            found[data["name"]] = {key: value for key, value in data.items() if key != "name"}
    return found


def records_agent(store: TapeStore, tape: str, defined: Callable[[str], Container[str]] | None = None) -> bool:
    """Whether ``tape`` is an agent's: named ``<tape>~<name>``, and either holding a handoff between agents or
    defined as agent ``name`` on the notebook's tape. A user's tape that only has ``~`` in its name, such as
    ``notes~draft``, is no agent's. ``defined`` gives the agents a notebook defines (default: read them)."""
    agent = agent_of_tape(tape)
    if agent is None:
        return False
    if store.exists(tape) and any(True for _ in _events(store, tape, CONTEXT_HANDOFF)):
        return True
    return agent in (defined or (lambda notebook: defined_agents(store, notebook)))(notebook_of_tape(tape))


def agent_tapes(store: TapeStore, tapes: list[str] | None = None) -> set[str]:
    """The tapes among ``tapes`` (default: all of ``store``'s) that are agents' (:func:`records_agent`), each
    notebook's definitions read once."""
    defined = functools.cache(lambda notebook: set(defined_agents(store, notebook)))
    return {name for name in (store.list_tapes() if tapes is None else tapes) if records_agent(store, name, defined)}


def notebook_agents(store: TapeStore, notebook: str) -> list[str]:
    """Every agent of the notebook whose tape is ``notebook``: those it defines, then those whose tapes beside it
    hold a handoff between agents."""
    names = list(defined_agents(store, notebook))
    prefix = notebook + AGENT_MARK
    for tape in store.list_tapes():
        agent = agent_of_tape(tape)
        if tape.startswith(prefix) and agent is not None and agent not in names and records_agent(store, tape, _none):
            names.append(agent)  # not defined here: it is an agent's only if it holds a handoff
    return names


def _events(store: TapeStore, tape: str, name: str) -> Any:
    """The events called ``name`` on ``tape``, newest first."""
    if not store.exists(tape):
        return iter(())
    if isinstance(store, SearchesLines):  # skips the lines without the name before decoding them
        entries = store.iter_reverse_matching(tape, [f'"{name}"'.encode()])
    else:
        entries = store.iter_reverse(tape)
    return (entry for entry in entries if entry.kind == "event" and entry.payload.get("name") == name)


def _none(notebook: str) -> tuple[str, ...]:
    return ()
