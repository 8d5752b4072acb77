"""The agents of one notebook: each on its own tape, who holds the conversation, and handoffs between them."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING, Any

from bub_nb.agent.eventloop import run_sync
from bub_nb.agent.summaries.summarize import closing_phase, summarize_phase
from bub_nb.agent.team.agent_handoff import (
    AgentHandoff,
    address_name,
    check_agent_handoff,
    handoff_record,
    write_agent_handoff,
)
from bub_nb.agent.team.ownership import Ownership, Passing, holder, passings
from bub_nb.errors import AgentError
from bub_nb.tape import Tape
from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.events import AGENT, SUMMARY
from bub_nb.tape.names import MAIN_AGENT, agent_tape_name, check_agent_name, entry_address, notebook_of_tape
from bub_nb.tape.open import notebook_tapes
from bub_nb.tape.stores.agent_tapes import defined_agents, notebook_agents
from bub_nb.tape.stores.protocol import LocksNotebooks

if TYPE_CHECKING:
    from bub_nb.agent.loop import Agent
    from bub_nb.agent.models import Model


_PROCESS_LOCKS: dict[tuple[int, str], threading.RLock] = {}
_PROCESS_LOCKS_GUARD = threading.Lock()
_HELD = threading.local()  # the notebook locks this thread holds: (store, notebook tape)


class Team:
    """The agents of the notebook whose tape is ``tape``: ``main`` (the unnamed agent, on ``tape`` itself) and
    named agents, each on ``<tape>~<name>``. Agents are added by name or as :class:`~bub_nb.Agent` objects;
    an agent object lends its model to summaries.

    Everything about ownership is read from the tapes: the agents whose tapes record one (an ``agent`` event or a
    handoff between agents) are members from the start, and who holds the conversation is a fold over the
    handoffs the tapes record, extended by what they gained since (:class:`Ownership`). A handoff checks the
    holder and writes under the notebook's lock, so two kernels never both hand the conversation on from a
    holder one of them already replaced."""

    def __init__(self, tape: Tape, agents: Iterable[Agent | str] = ()) -> None:
        self.tape = Tape(notebook_of_tape(tape.name), tape.base_store)
        self._agents: dict[str, Agent | None] = {MAIN_AGENT: None}
        self._ownership = Ownership()
        for agent in agents:
            self.add(agent)
        self.discover()

    def discover(self) -> list[str]:
        """Add every agent the tapes record (defined on the notebook's tape, or holding a handoff on its own); the
        names added."""
        found = [name for name in notebook_agents(self.tape.base_store, self.tape.name) if name not in self._agents]
        for agent in found:
            self._agents[agent] = None
        return found

    def __repr__(self) -> str:
        return f"Team(tape={self.tape.name!r}, agents={self.names})"

    def add(self, agent: Agent | str) -> Agent | None:
        """Make ``agent`` (a name, or an agent on one of this notebook's tapes) a member of the team."""
        if isinstance(agent, str):
            self._agents[check_agent_name(agent)] = self._agents.get(agent)
            return None
        name = agent.name or MAIN_AGENT
        if agent.tape.name != agent_tape_name(self.tape.name, name):
            raise AgentError(f"Agent {name!r} works on tape {agent.tape.name!r}, not on a tape of {self.tape.name!r}")
        self._agents[name] = agent
        agent.team = self
        return agent

    @property
    def names(self) -> list[str]:
        return list(self._agents)

    def define(self, name: str, settings: Mapping[str, Any], meta: Mapping[str, Any] | None = None) -> TapeEntry:
        """Record agent ``name`` on the notebook's tape, an ``agent`` event with the ``settings`` it runs with, and
        make it a member: a kernel that starts later (or another one) finds it there."""
        if check_agent_name(name) == MAIN_AGENT:
            raise AgentError(f"{MAIN_AGENT!r} is the notebook's unnamed agent; its settings are the notebook's")
        entry = self.tape.append_event(AGENT, {"name": name, **settings}, **dict(meta or {}))
        self._agents.setdefault(name, None)
        return entry

    def recorded(self, name: str) -> dict[str, Any] | None:
        """The settings the newest ``agent`` event on the notebook's tape records for ``name``; ``None`` if none."""
        return defined_agents(self.tape.base_store, self.tape.name).get(name)

    def agent(self, name: str) -> Agent | None:
        """The agent object added under ``name`` (``None`` when only its name was added)."""
        self._check_known(name)
        return self._agents[name]

    def tape_of(self, name: str) -> Tape:
        """The tape agent ``name`` works on."""
        self._check_known(name)
        return Tape(agent_tape_name(self.tape.name, name), self.tape.base_store)

    def tapes(self) -> dict[str, Tape]:
        return {name: self.tape_of(name) for name in self._agents}

    def ownership(self) -> Ownership:
        """Who holds the conversation, brought up to date with the tapes: what other writers appended is seen,
        and only that is read. An agent a handoff names that is not a member yet becomes one."""
        while True:
            self._ownership.update(self.tapes())
            unknown = sorted(name for name in self._ownership.named - set(self._agents) if _valid_agent_name(name))
            if not unknown:
                return self._ownership
            for name in unknown:
                self._agents[name] = None

    def history(self) -> list[Passing]:
        """Every complete handoff between the team's agents, oldest first, from the tapes."""
        return self.ownership().history

    def holder(self) -> str | None:
        """The agent that holds the conversation: the receiver of the newest transfer, else ``None``."""
        return self.ownership().holder

    def check_may_run(self, name: str) -> None:
        """Refuse, in one line naming the holder, an agent that handed the conversation away."""
        self._check_known(name)
        self.ownership().check_may_run(name)

    @contextmanager
    def locked(self) -> Iterator[None]:
        """The notebook's lock, which every process takes to change who holds the conversation: the store's (a
        file beside the tapes, a lock in the database), else one for this process. Taken again by the thread that
        holds it, it is already held."""
        store = self.tape.base_store
        key = (id(store), self.tape.name)
        held = _HELD.__dict__.setdefault("keys", set())
        if key in held:
            yield
            return
        with _PROCESS_LOCKS_GUARD:
            lock = _PROCESS_LOCKS.setdefault(key, threading.RLock())
        with lock, store.notebook_lock(self.tape.name) if isinstance(store, LocksNotebooks) else nullcontext():
            held.add(key)
            try:
                yield
            finally:
                held.discard(key)

    def handoff(
        self,
        name: str,
        *,
        to: str,
        sender: str | None = None,
        reason: str | None = None,
        summary: str | None = None,
        next_steps: str | None = None,
        context_summary: str | None = None,
        share: bool = False,
        summarize: bool = False,
        state: Mapping[str, Any] | None = None,
        model: Model | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> AgentHandoff:
        """Hand the conversation from ``sender`` (default: the holder, else ``main``) to ``to``.

        ``transfer`` (the default) makes ``to`` the holder; ``share=True`` leaves both able to run. With
        ``summarize`` the sender's model (or ``model``) summarizes the phase it closes, citing its entries; the
        summary and next steps fill ``summary`` and ``next_steps`` unless given. Nothing is written unless all of
        it can be: unknown agents, an agent handing to itself, a bad state or citation are refused first.
        """
        given = sender
        sender = sender or self.holder() or MAIN_AGENT
        self._check_known(sender)
        self._check_known(to)
        if sender == to:
            raise AgentError(f"Agent {sender!r} cannot hand the conversation to itself")
        self.check_may_run(sender)
        sender_tape, receiver_tape = self.tape_of(sender), self.tape_of(to)
        ownership = "share" if share else "transfer"
        args = dict(reason=reason, summary=summary, next_steps=next_steps, context_summary=context_summary)
        probe = handoff_record(sender, to, tape_ref=None, ownership=ownership, state=state, **args)
        check_agent_handoff(sender_tape, receiver_tape, name, probe)  # before a summary costs a model call
        before: tuple[TapeEntry, ...] = ()
        if summarize:
            agent = self._agents.get(sender)
            chosen = model or (agent.model if agent is not None else None)
            if chosen is None:
                raise AgentError(f"Summarizing needs a model for {sender!r}: pass model=, or add it as an Agent")
            made = run_sync(summarize_phase(chosen, closing_phase(sender_tape)))
            args["summary"] = summary or made.summary
            args["next_steps"] = next_steps or made.next_steps or None
            before = (TapeEntry.event(SUMMARY, made.event_data(name), **dict(meta or {})),)
        with self.locked():  # the check and the write are one step for every kernel of the notebook
            self.check_may_run(sender)  # again: another kernel may have handed the conversation on meanwhile
            now = self.holder() or MAIN_AGENT
            if given is None and now != sender:
                raise AgentError(
                    f"{now!r} was handed the conversation while handoff {name!r} from {sender!r} was prepared; "
                    f"nothing was written: hand it on as {now!r} (%handoff NAME --to AGENT)"
                )
            last = sender_tape.last_id
            tape_ref = entry_address(address_name(sender_tape), last) if last else None
            record = handoff_record(sender, to, tape_ref=tape_ref, ownership=ownership, state=state, **args)
            return write_agent_handoff(sender_tape, receiver_tape, name, record, before=before, meta=meta)

    def _check_known(self, name: str) -> None:
        if name not in self._agents:
            check_agent_name(name)
            if name in self.discover():  # defined by another kernel since, or before a restart
                return
            raise AgentError(f"No agent named {name!r} in this notebook; known: {', '.join(self._agents)}")


def _valid_agent_name(name: str) -> bool:
    try:
        check_agent_name(name)
    except AgentError:
        return False
    return True


def holder_on_tapes(tape: Tape) -> str | None:
    """Who holds the conversation of ``tape``'s notebook by a fold from scratch over its agents' tapes, as a
    kernel that starts now finds it: what :meth:`Team.holder` keeps incrementally must always equal it."""
    return holder(passings(notebook_tapes(tape)))
