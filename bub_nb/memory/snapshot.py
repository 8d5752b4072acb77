"""Memory snapshots: the long-term note and daily notes one sealed memory zone holds."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Final

from bub_nb.errors import MemoryZoneError
from bub_nb.tape.entries import TapeEntry

LONG_TERM_EVENT: Final = "memory.long_term"
DAILY_EVENT: Final = "memory.daily"
RECENT_DAYS: Final = 7
USAGE_HINT: Final = (
    "Use `memory.save` to update long-term memory, `memory.daily` to append to\n"
    "daily notes, and `memory.recall` to search past memories."
)


def today_utc() -> date:
    return datetime.now(UTC).date()


def as_date(value: date | str | None) -> date:
    """A calendar day from a date, an ISO ``YYYY-MM-DD`` string, or ``None`` for today (UTC)."""
    if value is None:
        return today_utc()
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    try:
        if isinstance(value, str) and len(value) == 10:
            return date.fromisoformat(value)
    except ValueError:
        pass
    raise MemoryZoneError(f"Memory dates are days written YYYY-MM-DD, got {value!r}")


@dataclass(frozen=True, slots=True)
class DailyNote:
    """One day's notes; ``date`` is ``YYYY-MM-DD``."""

    date: str
    content: str


@dataclass(frozen=True, slots=True)
class MemorySnapshot:
    """What the current memory zone says. ``dailies`` run newest first; version 0 means no zone yet."""

    version: int = 0
    long_term: str = ""
    dailies: tuple[DailyNote, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not self.long_term and not self.dailies

    def daily(self, day: date | str) -> str | None:
        """The note for one day, or ``None``."""
        wanted = as_date(day).isoformat()
        return next((note.content for note in self.dailies if note.date == wanted), None)

    def recent(self, days: int = RECENT_DAYS, today: date | str | None = None) -> tuple[DailyNote, ...]:
        """Notes from the ``days`` days before ``today``, today itself excluded, newest first."""
        end = as_date(today)
        start = (end - timedelta(days=days)).isoformat()
        return tuple(note for note in self.dailies if start <= note.date < end.isoformat())

    def with_long_term(self, content: str) -> MemorySnapshot:
        return dataclasses.replace(self, long_term=content)

    def with_daily(self, day: str, content: str) -> MemorySnapshot:
        """The same memory with the note for ``day`` set to ``content``."""
        notes = [note for note in self.dailies if note.date != day]
        notes.append(DailyNote(day, content))
        return dataclasses.replace(self, dailies=_newest_first(notes))

    def appended_daily(self, day: str, content: str) -> MemorySnapshot:
        """The same memory with ``content`` added to ``day``'s note, which starts with a ``# day`` heading."""
        existing = self.daily(day)
        return self.with_daily(day, f"{existing}\n{content}" if existing else f"# {day}\n\n{content}")

    def pruned(self, retention_days: int, today: date | str | None = None) -> MemorySnapshot:
        """The same memory without daily notes older than ``retention_days``."""
        cutoff = (as_date(today) - timedelta(days=retention_days)).isoformat()
        return dataclasses.replace(self, dailies=tuple(note for note in self.dailies if note.date >= cutoff))

    def get_context(self, today: date | str | None = None) -> str:
        """The ``<memory>`` block for the system prompt; empty when there is nothing to remember."""
        day = as_date(today)
        sections: list[str] = []
        if self.long_term:
            sections.append(f"## Long-term Memory\n{self.long_term}")
        today_note = self.daily(day)
        if today_note:
            sections.append(f"## Today's Notes\n{today_note}")
        recent = self.recent(RECENT_DAYS, day)
        if recent:
            lines = ["## Recent Notes"]
            for note in recent:
                lines.extend((f"### {note.date}", note.content))
            sections.append("\n".join(lines))
        if not sections:
            return ""
        return "<memory>\n" + "\n\n".join([USAGE_HINT, *sections]) + "\n</memory>"


def _newest_first(notes: Iterable[DailyNote]) -> tuple[DailyNote, ...]:
    return tuple(sorted(notes, key=lambda note: note.date, reverse=True))


def parse_zone(entries: Iterable[TapeEntry], version: int) -> MemorySnapshot:
    """Read the memory events between a zone's open and seal; later events win, other entries are ignored."""
    long_term = ""
    dailies: dict[str, str] = {}
    for entry in entries:
        data = entry.payload.get("data") if entry.kind == "event" else None
        if not isinstance(data, dict):
            continue
        content = data.get("content")
        if not isinstance(content, str):
            continue
        if entry.name == LONG_TERM_EVENT:
            long_term = content
        elif entry.name == DAILY_EVENT and isinstance(data.get("date"), str):
            dailies[data["date"]] = content
    return MemorySnapshot(version, long_term, _newest_first(DailyNote(d, c) for d, c in dailies.items()))


def zone_entries(snapshot: MemorySnapshot, updated_at: str) -> list[TapeEntry]:
    """The events one zone holds for ``snapshot``, without its bounding anchors."""
    events: list[TapeEntry] = []
    if snapshot.long_term:
        events.append(TapeEntry.event(LONG_TERM_EVENT, {"content": snapshot.long_term, "updated_at": updated_at}))
    for note in snapshot.dailies:
        events.append(
            TapeEntry.event(DAILY_EVENT, {"date": note.date, "content": note.content, "updated_at": updated_at})
        )
    return events
