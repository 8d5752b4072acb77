"""Who holds the conversation, read from the agents' tapes alone: the handoffs their receivers' anchors record.

A handoff counts once the receiver's anchor exists (a half-written one never does). The holder is the receiver
of the newest ``transfer``; an agent that handed the conversation away by transfer, and has not been handed it
since, may not run. A ``share`` moves no ownership and leaves both agents able to run: its receiver too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bub_nb.agent.team.handoff import AGENT_PREFIX
from bub_nb.errors import NotHoldingError
from bub_nb.tape.events import CONTEXT_HANDOFF

if TYPE_CHECKING:
    from bub_nb.tape import Tape


@dataclass(frozen=True, slots=True)
class Passing:
    """One complete handoff between agents, as the receiver's anchor records it."""

    timestamp: str
    sender: str
    receiver: str
    ownership: str
    name: str
    anchor_id: int
    """The receiver's anchor."""
    sender_anchor: str | None
    """The ``tape://`` address of the sender's anchor."""


def passings(tapes: Mapping[str, Tape]) -> list[Passing]:
    """Every complete handoff received by the agents of ``tapes`` (agent name → its tape), oldest first."""
    found: list[Passing] = []
    for agent, tape in tapes.items():
        if not tape.store.exists(tape.name):
            continue
        for ref in tape.store.anchors(tape.name):
            state = tape.get(ref.id).payload.get("state")
            record = state.get(CONTEXT_HANDOFF) if isinstance(state, dict) else None
            if not isinstance(record, dict) or record.get("to") != AGENT_PREFIX + agent:
                continue
            content = record["content"] if isinstance(record.get("content"), dict) else {}
            sender = str(record.get("from", ""))
            found.append(
                Passing(
                    str(record.get("timestamp", "")),
                    sender[len(AGENT_PREFIX) :] if sender.startswith(AGENT_PREFIX) else sender,
                    agent,
                    str(content.get("ownership", "transfer")),
                    ref.name,
                    ref.id,
                    content.get("anchor") if isinstance(content.get("anchor"), str) else None,
                )
            )
    return sorted(found, key=lambda passing: passing.timestamp)


def holder(history: Sequence[Passing]) -> str | None:
    """The agent that received the newest transfer; ``None`` when the conversation was never transferred."""
    transfers = [passing for passing in history if passing.ownership == "transfer"]
    return transfers[-1].receiver if transfers else None


def handed_away(history: Sequence[Passing]) -> set[str]:
    """The agents that transferred the conversation and were not handed it (or a share of it) since."""
    away: set[str] = set()
    for passing in history:
        if passing.ownership == "transfer":
            away.add(passing.sender)
        away.discard(passing.receiver)
    return away


def check_may_run(agent: str, history: Sequence[Passing]) -> None:
    """Refuse (:class:`NotHoldingError`) an agent that handed the conversation away and does not hold it."""
    if agent in handed_away(history):
        held_by = holder(history)
        last = next(p for p in reversed(history) if p.ownership == "transfer" and p.sender == agent)
        raise NotHoldingError(
            f"Agent {agent!r} handed the conversation to {last.receiver!r} (⚓ {last.name}); {held_by!r} holds it "
            f"now: run as {held_by!r}, or have it hand the conversation back (%handoff NAME --to {agent})"
        )
