"""Who holds the conversation, read from the agents' tapes alone: the handoffs their receivers' anchors record.

A handoff counts once the receiver's anchor exists (a half-written one never does). The holder is the receiver
of the newest ``transfer``; an agent that handed the conversation away by transfer, and has not been handed it
since, may not run. A ``share`` moves no ownership and leaves both agents able to run: its receiver too.

:func:`passings` with :func:`holder` and :func:`handed_away` are the fold over the tapes from scratch;
:class:`Ownership` keeps the same fold and extends it by what the tapes gained since it last looked, so finding
the holder costs the same after a thousand handoffs as after none.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bub_nb.agent.team.agent_handoff import AGENT_PREFIX
from bub_nb.errors import NotHoldingError
from bub_nb.tape.events import CONTEXT_HANDOFF
from bub_nb.tape.stores.protocol import AnchorRef

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
        if tape.store.exists(tape.name):
            found += _received(agent, tape, tape.store.anchors(tape.name))
    return sorted(found, key=_when)


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
        last = next(p for p in reversed(history) if p.ownership == "transfer" and p.sender == agent)
        raise _not_holding(agent, last, holder(history))


@dataclass(frozen=True, slots=True)
class _Seen:
    """How far the fold has read one agent's tape."""

    last_id: int
    size: int | None
    anchors: int
    newest: AnchorRef | None
    """The newest anchor read, with its date: when another stands at its place, the tape started over."""
    newest_date: str | None


class Ownership:
    """The fold of :func:`passings`, :func:`holder` and :func:`handed_away`, kept between calls.

    :meth:`update` reads only the anchors the agents' tapes gained since it last looked (one ``stats`` per tape
    when none grew), so its cost does not grow with the handoffs already made. It reads everything again only
    when a tape started over (a reset) or a handoff arrives older than one already folded.
    """

    def __init__(self) -> None:
        self._seen: dict[str, _Seen] = {}
        self._history: list[Passing] = []
        self._holder: str | None = None
        self._away: set[str] = set()
        self._last_transfer: dict[str, Passing] = {}
        self.named: set[str] = set()
        """Every agent a handoff record read so far names, as sender or receiver: members the team may lack."""

    def update(self, tapes: Mapping[str, Tape]) -> None:
        """Fold in what ``tapes`` (agent name → its tape) gained since the last call."""
        fresh: list[Passing] = []
        for agent, tape in tapes.items():
            grown = self._grown(agent, tape)
            if grown is None:
                self._rebuild(tapes)
                return
            fresh += grown
        fresh.sort(key=_when)
        if fresh and self._history and _when(fresh[0]) <= _when(self._history[-1]):
            self._rebuild(tapes)  # the order a fold from scratch would give is not "what came later, last"
            return
        for passing in fresh:
            self._fold(passing)

    @property
    def history(self) -> list[Passing]:
        return list(self._history)

    @property
    def holder(self) -> str | None:
        return self._holder

    @property
    def handed_away(self) -> set[str]:
        return set(self._away)

    def check_may_run(self, agent: str) -> None:
        """:func:`check_may_run` on the folded history, without going over it."""
        if agent in self._away:
            raise _not_holding(agent, self._last_transfer[agent], self._holder)

    def _grown(self, agent: str, tape: Tape) -> list[Passing] | None:
        """The handoffs ``agent``'s tape received since it was last read; ``None`` when it started over."""
        store = tape.base_store
        stats = store.stats(tape.name)
        seen = self._seen.get(agent) or _Seen(0, 0, 0, None, None)
        if stats.last_id == seen.last_id and stats.size_bytes == seen.size and stats.size_bytes is not None:
            return []  # nothing appended, and not started over: the same length in bytes
        if stats.last_id < seen.last_id:
            return None
        anchors = store.anchors(tape.name)
        if seen.newest is not None and (
            len(anchors) < seen.anchors
            or anchors[seen.anchors - 1] != seen.newest
            or tape.get(seen.newest.id).date != seen.newest_date
        ):
            return None  # a reset: what stands where the newest anchor read was is another entry
        newest = anchors[-1] if len(anchors) else None
        date = tape.get(newest.id).date if newest is not None else None
        self._seen[agent] = _Seen(stats.last_id, stats.size_bytes, len(anchors), newest, date)
        return _received(agent, tape, anchors[seen.anchors :], self.named)

    def _rebuild(self, tapes: Mapping[str, Tape]) -> None:
        self._seen.clear()
        self._history.clear()
        self._away.clear()
        self._last_transfer.clear()
        self._holder = None
        fresh: list[Passing] = []
        for agent, tape in tapes.items():
            fresh += self._grown(agent, tape) or []
        for passing in sorted(fresh, key=_when):
            self._fold(passing)

    def _fold(self, passing: Passing) -> None:
        self._history.append(passing)
        if passing.ownership == "transfer":
            self._holder = passing.receiver
            self._away.add(passing.sender)
            self._last_transfer[passing.sender] = passing
        self._away.discard(passing.receiver)


def _when(passing: Passing) -> str:
    return passing.timestamp


def _record(tape: Tape, ref: AnchorRef) -> dict[str, Any] | None:
    state = tape.get(ref.id).payload.get("state")
    record = state.get(CONTEXT_HANDOFF) if isinstance(state, dict) else None
    return record if isinstance(record, dict) else None


def _received(agent: str, tape: Tape, anchors: Iterable[AnchorRef], named: set[str] | None = None) -> list[Passing]:
    """The handoffs among ``anchors`` that ``agent`` received; every agent their records name goes into ``named``."""
    found: list[Passing] = []
    for ref in anchors:
        record = _record(tape, ref)
        if record is None:
            continue
        if named is not None:
            named.update(
                value[len(AGENT_PREFIX) :]
                for value in (record.get("from"), record.get("to"))
                if isinstance(value, str) and value.startswith(AGENT_PREFIX)
            )
        if record.get("to") != AGENT_PREFIX + agent:
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
    return found


def _not_holding(agent: str, last: Passing, held_by: str | None) -> NotHoldingError:
    return NotHoldingError(
        f"Agent {agent!r} handed the conversation to {last.receiver!r} (anchor {last.name}); {held_by!r} holds it "
        f"now: run as {held_by!r}, or have it hand the conversation back (%handoff NAME --to {agent})"
    )
