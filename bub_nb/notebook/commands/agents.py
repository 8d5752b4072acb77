"""``%agent``: define a named agent of the notebook, or list the agents, their tapes and who holds the conversation."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from IPython.core.error import UsageError

from bub_nb.notebook.agents import AgentSettings
from bub_nb.notebook.display import show
from bub_nb.notebook.turn_options import AGENT_USAGE, TURN_OPTIONS

if TYPE_CHECKING:
    from bub_nb.notebook.session import NotebookSession

_SHOWN = 10  # handoffs the listing names, the newest


class AgentCommands:
    """What ``%agent`` does on the session's agents."""

    def __init__(self, session: NotebookSession) -> None:
        self._session = session

    def run(self, args: argparse.Namespace) -> None:
        if args.lanes:
            if args.name is not None or any(value is not None for value in _options(args).values()):
                raise UsageError("--lanes draws every agent and takes nothing else: %agent --lanes")
            from IPython.display import display

            from bub_nb.notebook.widgets import AgentLanes

            display(AgentLanes(self._session.tape))
            return
        if args.name is None:
            given = [flag for flag, value in _options(args).items() if value is not None]
            if given:
                raise UsageError(f"{', '.join(given)} set an agent's settings and need its NAME: {AGENT_USAGE}")
            show(self.listing())
            return
        settings = AgentSettings(args.name, **{option.name: getattr(args, option.name) for option in _AGENT_OPTIONS})
        self._check(settings)
        team = self._session.team()
        defined = self._session.agents.record(team, settings, {"source": "notebook"})
        tape = team.tape_of(defined.name)
        model = defined.model or self._session.settings.model
        show(
            f"Agent `{defined.name}` works on tape `{tape.name}` with model `{model}`. "
            f"`%%bub --agent {defined.name}` runs a turn as it; `%handoff NAME --to {defined.name}` hands it the "
            "conversation."
        )

    def _check(self, settings: AgentSettings) -> None:
        """Refuse settings the agent could not run with, before they are kept."""
        from bub_nb.context import parse_mode

        if settings.context:
            parse_mode(settings.context)
        self._session.agent_options(model=settings.model, tools=settings.tools)

    def listing(self) -> str:
        """The agents as a Markdown table: tape, model, entries, and which one holds the conversation."""
        session = self._session
        team = session.team()
        team.discover()  # agents another kernel defined since
        session.agents.load(team)
        history = team.history()
        holder = team.holder()
        rows = ["| agent | tape | model | entries | holds |", "|---|---|---|---:|---|"]
        for name in team.names:
            own = session.agents.get(name)
            tape = team.tape_of(name)
            entries = len(tape) if tape.store.exists(tape.name) else 0
            model = (own.model if own is not None else None) or session.settings.model
            mark = "holds" if name == holder else ""
            rows.append(f"| {name} | `{tape.name}` | `{model}` | {entries} | {mark} |")
        if holder is None:
            who = "Nobody has been handed the conversation: a `%%bub` cell runs as `main`."
        else:
            who = f"`{holder}` holds the conversation: a `%%bub` cell without `--agent` runs as it."
        passed = [f"{p.sender} → {p.receiver} ({p.ownership}, anchor {p.name})" for p in history[-_SHOWN:]]
        earlier = f"{len(history) - _SHOWN} earlier, then " if len(history) > _SHOWN else ""
        handoffs = f"\n\nHandoffs, oldest first: {earlier}{'; '.join(passed)}." if passed else ""
        return "\n".join(rows) + f"\n\n{who}{handoffs}"


_AGENT_OPTIONS = [option for option in TURN_OPTIONS if option.agent]


def _options(args: argparse.Namespace) -> dict[str, str | None]:
    """The agent's settings the line gave, by the flag that gives each."""
    return {option.flag: getattr(args, option.name) for option in _AGENT_OPTIONS}
