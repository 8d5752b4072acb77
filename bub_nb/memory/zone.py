"""The memory zone: versioned ``memory.open`` … ``memory.seal`` regions appended to a tape.

The zone is bounded by events, not anchors: Bub (0.5.1) starts a model's context after the last anchor of any name,
so an anchor-bounded zone would cut the phase short for Bub after every memory save. Tapes written before keep
reading: a zone between ``memory/open`` and ``memory/seal`` anchors is found through the anchor index as it always
was, and versions count across both kinds, so the newest zone wins whichever kind bounds it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import date
from typing import TYPE_CHECKING, Any, Final

from bub_nb.memory.snapshot import (
    DAILY_EVENT,
    LONG_TERM_EVENT,
    MemorySnapshot,
    as_date,
    parse_zone,
    zone_entries,
)
from bub_nb.tape.anchors import AnchorSummary
from bub_nb.tape.entries import MEMORY_BOUND_EVENTS, TapeEntry, utc_now
from bub_nb.tape.stores.protocol import SearchesLines

if TYPE_CHECKING:
    from bub_nb.tape import Tape

OPEN_EVENT, SEAL_EVENT = MEMORY_BOUND_EVENTS
OPEN_ANCHOR: Final = "memory/open"
"""How zones were opened before they were bounded by events; still read."""
SEAL_ANCHOR: Final = "memory/seal"
_OPENS: Final = (OPEN_EVENT, OPEN_ANCHOR)
_MARK_WORD: Final = b'"memory.'
DEFAULT_RETENTION_DAYS: Final = 30


@dataclass(frozen=True, slots=True)
class MemoryVersion:
    """One sealed zone on the tape, as a history row: which entries hold it and what it held."""

    version: int
    open_id: int
    seal_id: int
    entry_ids: tuple[int, ...]
    date: str
    long_term_chars: int
    daily_count: int
    current: bool


@dataclass(frozen=True, slots=True)
class _Zone:
    version: int
    open: AnchorSummary
    seal: AnchorSummary


class MemoryZone:
    """Memory kept on the tape itself (docs/concepts.md#memory-zone).

    Every change appends a new zone with the next version; nothing is rewritten. Reading takes
    the highest version whose ``memory.seal`` has a matching ``memory.open`` before it, so a
    zone cut short by a crash (an open without its seal) or a stray seal is simply ignored.
    The bounding events are found by their bytes where the store can search lines (the file store),
    older anchor-bounded zones through the anchor index, and only the current zone is read whole.
    """

    def __init__(self, tape: Tape, *, retention_days: int = DEFAULT_RETENTION_DAYS) -> None:
        self._tape = tape
        self.retention_days = retention_days

    @property
    def tape(self) -> Tape:
        return self._tape

    def __repr__(self) -> str:
        return f"MemoryZone(tape={self._tape.name!r}, retention_days={self.retention_days})"

    # -- reading ---------------------------------------------------------------------------------

    def read(self) -> MemorySnapshot:
        """The current memory; an empty snapshot with version 0 when the tape has no zone."""
        zone = self._current()
        if zone is None:
            return MemorySnapshot()
        return parse_zone(self._tape.read(zone.open.id + 1, zone.seal.id), zone.version)

    def get_context(self, today: date | str | None = None) -> str:
        """The ``<memory>`` block for the system prompt (``today`` defaults to the UTC date)."""
        return self.read().get_context(today)

    def history(self) -> tuple[MemoryVersion, ...]:
        """Every sealed zone, oldest first, the current one marked."""
        zones = self._zones()
        current = _newest(zones)
        rows = []
        for zone in zones:
            inside = [
                entry
                for entry in self._tape.read(zone.open.id + 1, zone.seal.id)
                if entry.kind == "event" and (entry.name or "").startswith("memory.")
            ]
            snapshot = parse_zone(inside, zone.version)
            rows.append(
                MemoryVersion(
                    version=zone.version,
                    open_id=zone.open.id,
                    seal_id=zone.seal.id,
                    entry_ids=(zone.open.id, *(entry.id for entry in inside), zone.seal.id),
                    date=zone.seal.date,
                    long_term_chars=len(snapshot.long_term),
                    daily_count=len(snapshot.dailies),
                    current=zone is current,
                )
            )
        return tuple(rows)

    # -- writing ---------------------------------------------------------------------------------

    def ensure(self) -> MemorySnapshot:
        """Write an empty zone when the tape has none; return the current memory either way."""
        if self._current() is None:
            return self._write(MemorySnapshot())
        return self.read()

    def save_long_term(self, content: str) -> MemorySnapshot:
        """Replace the long-term memory with ``content``."""
        return self._write(self.read().with_long_term(content))

    def append_daily(self, content: str, date: date | str | None = None) -> MemorySnapshot:
        """Add ``content`` to the note of ``date`` (today, UTC, by default)."""
        day = as_date(date).isoformat()
        return self._write(self.read().appended_daily(day, content))

    def clear(self) -> MemorySnapshot:
        """Forget everything: a new, empty zone supersedes the old ones, which stay on the tape."""
        return self._write(MemorySnapshot())

    def prune(self, today: date | str | None = None) -> int:
        """Drop daily notes older than ``retention_days``; returns how many went (no write when none)."""
        snapshot = self.read()
        pruned = snapshot.pruned(self.retention_days, today)
        removed = len(snapshot.dailies) - len(pruned.dailies)
        if removed:
            self._write(pruned)
        return removed

    def retracted_notes(self, notes: Sequence[TapeEntry], *, undo: bool = False) -> bool:
        """Take retracted notes (``memory.long_term`` / ``memory.daily`` events) out of the memory, or with ``undo``
        put them back: a new zone, so the next system prompt follows. Returns whether one was written.

        A note copied forward by a later save is matched by its text, so retracting it in an old zone takes it
        out of the current memory too.
        """
        snapshot = self.read()
        changed = snapshot
        for note in notes:
            data = note.payload.get("data")
            content, day = (data.get("content"), data.get("date")) if isinstance(data, dict) else (None, None)
            if note.name == LONG_TERM_EVENT and isinstance(content, str):
                if undo:
                    changed = changed.with_long_term(content)
                elif changed.long_term == content:
                    changed = changed.with_long_term("")
            elif note.name == DAILY_EVENT and isinstance(content, str) and isinstance(day, str):
                if undo:
                    changed = changed.with_daily(day, content)
                elif changed.daily(day) == content:
                    changed = replace(changed, dailies=tuple(n for n in changed.dailies if n.date != day))
        if changed == snapshot or snapshot.version == 0:
            return False
        self._write(changed)
        return True

    def _write(self, snapshot: MemorySnapshot) -> MemorySnapshot:
        version = self._next_version()
        state = {"version": version}
        self._tape.extend(
            [
                TapeEntry.event(OPEN_EVENT, state),
                *zone_entries(snapshot, utc_now()),
                TapeEntry.event(SEAL_EVENT, state),
            ]
        )
        return MemorySnapshot(version, snapshot.long_term, snapshot.dailies)

    # -- finding zones ---------------------------------------------------------------------------

    def _memory_anchors(self) -> list[tuple[AnchorSummary, int]]:
        """Every zone bound on the tape, in tape order, with its version: events and the anchors of older tapes."""
        return sorted([*self._bounding_anchors(), *self._bounding_events()], key=lambda found: found[0].id)

    def _bounding_anchors(self) -> list[tuple[AnchorSummary, int]]:
        # The anchor index knows names without reading entries, so only memory anchors are read.
        tape = self._tape
        refs = [ref for ref in tape.store.anchors(tape.name) if ref.name in (OPEN_ANCHOR, SEAL_ANCHOR)]
        found = []
        for ref in refs:
            entry = tape.read(ref.id, ref.id + 1)
            if entry:
                found.extend(_bound(entry[0]))
        return found

    def _bounding_events(self, *, until_current: bool = False) -> list[tuple[AnchorSummary, int]]:
        """The bounding events, newest first; with ``until_current`` only back to the newest complete zone's open.

        A zone is written in one append, and each above every version before it, so the newest complete zone
        is the one with the highest version among the events: nothing older needs reading.
        """
        store, name = self._tape.store, self._tape.name
        if isinstance(store, SearchesLines):  # only lines naming a memory event are decoded
            entries: Iterable[TapeEntry] = store.iter_reverse_matching(name, [_MARK_WORD])
        else:
            entries = store.iter_reverse(name)
        found: list[tuple[AnchorSummary, int]] = []
        sealed: set[int] = set()
        for entry in entries:
            for bound, version in _bound(entry) if entry.kind == "event" else ():
                found.append((bound, version))
                if bound.name == SEAL_EVENT:
                    sealed.add(version)
                elif until_current and version in sealed:
                    return found
        return found

    def _zones(self) -> list[_Zone]:
        """Complete zones in tape order: each seal paired with the nearest earlier open of its version."""
        return _paired(self._memory_anchors())

    def _current(self) -> _Zone | None:
        events = _paired(list(reversed(self._bounding_events(until_current=True))))
        return _newest([*events[-1:], *_paired(self._bounding_anchors())])

    def _next_version(self) -> int:
        # Above every version on the tape, sealed or not, so a new zone is never confused with a stray one.
        bounds = [*self._bounding_anchors(), *self._bounding_events(until_current=True)]
        return max((version for _, version in bounds), default=0) + 1


def _paired(bounds: list[tuple[AnchorSummary, int]]) -> list[_Zone]:
    """Complete zones of ``bounds`` (in tape order): each seal paired with the nearest earlier open of its version."""
    opens: dict[int, AnchorSummary] = {}
    zones = []
    for bound, version in bounds:
        if bound.name in _OPENS:
            opens[version] = bound
        elif (opened := opens.pop(version, None)) is not None:
            zones.append(_Zone(version, opened, bound))
    return zones


def _newest(zones: list[_Zone]) -> _Zone | None:
    """The zone reads use: highest version, and the later one when two writers chose the same."""
    return max(zones, key=lambda zone: (zone.version, zone.seal.id), default=None)


def _bound(entry: TapeEntry) -> list[tuple[AnchorSummary, int]]:
    """``entry`` as a zone's bound with its version, when it is one (an event's data is its anchor's state)."""
    if entry.kind == "event" and entry.name in (OPEN_EVENT, SEAL_EVENT):
        state = entry.payload.get("data")
    elif entry.kind == "anchor" and entry.name in (OPEN_ANCHOR, SEAL_ANCHOR):
        state = entry.payload.get("state")
    else:
        return []
    version = _version(state)
    return [] if version is None else [(AnchorSummary(entry.id, entry.name or "", state, entry.date), version)]


def _version(state: Any) -> int | None:
    version = state.get("version") if isinstance(state, dict) else None
    return version if type(version) is int and version > 0 else None
