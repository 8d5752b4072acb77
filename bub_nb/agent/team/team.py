"""The agents of one notebook: each on its own tape, who holds the conversation, and handoffs between them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from bub_nb.agent.eventloop import run_sync
from bub_nb.agent.summaries.summarize import closing_phase, summarise_phase
from bub_nb.agent.team.handoff import (
    AgentHandoff,
    address_name,
    check_agent_handoff,
    handoff_record,
    write_agent_handoff,
)
from bub_nb.agent.team.ownership import Passing, check_may_run, holder, passings
from bub_nb.errors import AgentError
from bub_nb.tape import Tape
from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.events import SUMMARY
from bub_nb.tape.names import MAIN_AGENT, agent_tape_name, check_agent_name, entry_address, notebook_of_tape

if TYPE_CHECKING:
    from bub_nb.agent.loop import Agent
    from bub_nb.agent.models import Model


class Team:
    """The agents of the notebook whose tape is ``tape``: ``main`` (the unnamed agent, on ``tape`` itself) and
    named agents, each on ``<tape>~<name>``. Agents are added by name or as :class:`~bub_nb.Agent` objects;
    an agent object lends its model to summaries. Everything about ownership is read from the tapes."""

    def __init__(self, tape: Tape, agents: Iterable[Agent | str] = ()) -> None:
        self.tape = Tape(notebook_of_tape(tape.name), tape.base_store)
        self._agents: dict[str, Agent | None] = {MAIN_AGENT: None}
        self._history: tuple[tuple[tuple[str, int], ...], list[Passing]] | None = None
        for agent in agents:
            self.add(agent)

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

    def history(self) -> list[Passing]:
        """Every complete handoff between the team's agents, oldest first, from the tapes (read again whenever
        one of them grew: other writers are always seen)."""
        tapes = self.tapes()
        key = tuple((name, tape.last_id) for name, tape in tapes.items())
        if self._history is None or self._history[0] != key:
            self._history = (key, passings(tapes))
        return list(self._history[1])

    def holder(self) -> str | None:
        """The agent that holds the conversation: the receiver of the newest transfer, else ``None``."""
        return holder(self.history())

    def check_may_run(self, name: str) -> None:
        """Refuse, in one line naming the holder, an agent that handed the conversation away."""
        self._check_known(name)
        check_may_run(name, self.history())

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
        ``summarize`` the sender's model (or ``model``) summarises the phase it closes, citing its entries; the
        summary and next steps fill ``summary`` and ``next_steps`` unless given. Nothing is written unless all of
        it can be: unknown agents, an agent handing to itself, a bad state or citation are refused first.
        """
        history = self.history()
        sender = sender or holder(history) or MAIN_AGENT
        self._check_known(sender)
        self._check_known(to)
        if sender == to:
            raise AgentError(f"Agent {sender!r} cannot hand the conversation to itself")
        check_may_run(sender, history)
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
                raise AgentError(f"Summarising needs a model for {sender!r}: pass model=, or add it as an Agent")
            made = run_sync(summarise_phase(chosen, closing_phase(sender_tape)))
            args["summary"] = summary or made.summary
            args["next_steps"] = next_steps or made.next_steps or None
            before = (TapeEntry.event(SUMMARY, made.event_data(name), **dict(meta or {})),)
        last = sender_tape.last_id
        tape_ref = entry_address(address_name(sender_tape), last) if last else None
        record = handoff_record(sender, to, tape_ref=tape_ref, ownership=ownership, state=state, **args)
        return write_agent_handoff(sender_tape, receiver_tape, name, record, before=before, meta=meta)

    def _check_known(self, name: str) -> None:
        if name not in self._agents:
            check_agent_name(name)
            raise AgentError(f"No agent named {name!r} in this notebook; known: {', '.join(self._agents)}")
