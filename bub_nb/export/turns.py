"""A tape cut into turns: the entries from a prompt to its ``run`` event, with the anchors written before it."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.events import HANDOFF, RUN, SUMMARY, run_data

MARK_EVENTS = (HANDOFF, SUMMARY)
"""The events an export keeps beside anchors: a handoff, and what a summarizing handoff cost."""


@dataclass(frozen=True, slots=True)
class TapeTurn:
    """One turn as the tape holds it.

    ``entries`` run from the turn's first entry (its ``system`` prompt or its user message) to its ``run``
    event, inclusive. ``marks`` are the anchors, handoffs and summaries written after the previous turn and
    before this one: the state this turn inherits.
    """

    entries: tuple[TapeEntry, ...]
    marks: tuple[TapeEntry, ...] = ()

    @property
    def run(self) -> TapeEntry:
        return self.entries[-1]

    @property
    def data(self) -> dict[str, Any]:
        return run_data(self.run) or {}

    @property
    def run_id(self) -> str | None:
        value = self.run.meta.get("run_id")
        return value if isinstance(value, str) else None

    @property
    def prompt(self) -> TapeEntry | None:
        """The user message that started the turn."""
        return next((e for e in self.entries if is_user_message(e)), None)

    @property
    def system(self) -> TapeEntry | None:
        return next((e for e in self.entries if e.kind == "system"), None)


@dataclass(frozen=True, slots=True)
class TurnSplit:
    """Every closed turn of a tape, and the entries after the last ``run`` event (a turn still to come)."""

    turns: tuple[TapeTurn, ...]
    pending: tuple[TapeEntry, ...]


def is_user_message(entry: TapeEntry) -> bool:
    return entry.kind == "message" and entry.payload.get("role") == "user"


def is_mark(entry: TapeEntry) -> bool:
    """An anchor, or an event that belongs with one (a handoff, a summary)."""
    return entry.kind == "anchor" or (entry.kind == "event" and entry.payload.get("name") in MARK_EVENTS)


def split_turns(entries: Iterable[TapeEntry]) -> TurnSplit:
    """Cut ``entries`` (in tape order) at every ``run`` event.

    A turn starts at the first entry carrying its run event's ``run_id``; a run event without one (Bub's,
    or an older tape's) starts at the last user message before it. Anchors and handoffs between two turns
    become the later turn's ``marks``; other entries between turns (notebook cells, commands) are left out.
    Entries carrying the ``run_id`` of a run event still to come (a sub-agent's reply an imported log wrote
    between the records of another) wait for that run's turn instead of joining the one closing before it.
    """
    entries = list(entries)
    later: dict[str, int] = {}  # each run id to the position of its last run event
    for position, entry in enumerate(entries):
        if _is_run(entry) and (run_id := _run_id(entry)) is not None:
            later[run_id] = position
    coming = set(later)
    turns: list[TapeTurn] = []
    segment: list[TapeEntry] = []
    for position, entry in enumerate(entries):
        segment.append(entry)
        if _is_run(entry):
            if (run_id := _run_id(entry)) is not None and later[run_id] == position:
                coming.discard(run_id)
            turn, segment = _turn_of(segment, coming)
            turns.append(turn)
    return TurnSplit(tuple(turns), tuple(segment))


def _is_run(entry: TapeEntry) -> bool:
    return entry.kind == "event" and entry.payload.get("name") == RUN


def _run_id(entry: TapeEntry) -> str | None:
    value = entry.meta.get("run_id")
    return value if isinstance(value, str) else None


def _turn_of(segment: Sequence[TapeEntry], coming: Collection[str]) -> tuple[TapeTurn, list[TapeEntry]]:
    """The turn the last entry of ``segment`` closes, and the entries of the runs ``coming`` after it."""
    run = segment[-1]
    run_id = run.meta.get("run_id")
    held = [e for e in segment[:-1] if _run_id(e) != run_id and _run_id(e) in coming]
    rest = [e for e in segment[:-1] if _run_id(e) == run_id or _run_id(e) not in coming]
    start = len(rest)
    if run_id is not None:
        start = next((i for i, e in enumerate(rest) if e.meta.get("run_id") == run_id), start)
    else:
        start = next((i for i in range(len(rest) - 1, -1, -1) if is_user_message(rest[i])), start)
        if start > 0 and rest[start - 1].kind == "system":
            start -= 1
    marks = tuple(e for e in rest[:start] if is_mark(e))
    return TapeTurn((*rest[start:], run), marks), held
