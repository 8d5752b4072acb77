"""Chainable, immutable queries over one tape."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta
from typing import TYPE_CHECKING, Any

from bub_nb.errors import TapeError
from bub_nb.tape import anchors
from bub_nb.tape.anchors import StoredTape, check_kinds
from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.stores.protocol import SearchesLines
from bub_nb.tape.stores.search import needles
from bub_nb.tape.text import entry_text

if TYPE_CHECKING:
    import pandas as pd


def _as_utc(value: str | date | datetime, *, end: bool) -> datetime:
    """A bound as an aware datetime; a bare date means the whole day."""
    if isinstance(value, str):
        try:
            parsed: date | datetime = datetime.fromisoformat(value)
        except ValueError:
            raise TapeError(f"Date {value!r} is not ISO-8601 (for example 2026-02-10 or 2026-02-10T12:00)") from None
        if len(value.strip()) <= 10:
            parsed = parsed.date() if isinstance(parsed, datetime) else parsed
        value = parsed
    if not isinstance(value, datetime):
        value = datetime.combine(value, time.min) + (
            timedelta(days=1) - timedelta(microseconds=1) if end else timedelta()
        )
    return value if value.tzinfo else value.replace(tzinfo=UTC)


@dataclass(frozen=True)
class TapeQuery:
    """Filters that each return a new query; nothing is read until the query is iterated.

    ``tape.query().kinds("message").between_dates("2026-02-01", "2026-02-10").text("auth").limit(5)``
    """

    tape: StoredTape
    _kinds: tuple[str, ...] = ()
    _start: datetime | None = None
    _end: datetime | None = None
    _text: str | None = None
    _limit: int | None = None
    _after: str | None = None
    _until: str | None = None
    _last_anchor: bool = False
    _newest_first: bool = False

    def kinds(self, *kinds: str) -> TapeQuery:
        return replace(self, _kinds=check_kinds(kinds))

    def between_dates(self, start: str | date | datetime | None, end: str | date | datetime | None) -> TapeQuery:
        return replace(
            self,
            _start=None if start is None else _as_utc(start, end=False),
            _end=None if end is None else _as_utc(end, end=True),
        )

    def text(self, query: str) -> TapeQuery:
        return replace(self, _text=query.lower())

    def limit(self, n: int) -> TapeQuery:
        if n < 0:
            raise TapeError(f"Limit {n} must not be negative")
        return replace(self, _limit=n)

    def after_anchor(self, name: str) -> TapeQuery:
        return replace(self, _after=name, _last_anchor=False)

    def last_anchor(self) -> TapeQuery:
        return replace(self, _last_anchor=True, _after=None)

    def between_anchors(self, start: str, end: str) -> TapeQuery:
        return replace(self, _after=start, _until=end, _last_anchor=False)

    def newest_first(self) -> TapeQuery:
        return replace(self, _newest_first=True)

    def _source(self) -> Iterable[TapeEntry]:
        store, name = self.tape.store, self.tape.name
        if self._last_anchor:
            entries: list[TapeEntry] = anchors.from_last_anchor(store, name)
        elif self._after is not None and self._until is not None:
            entries = anchors.between_anchors(store, name, self._after, self._until)
        elif self._after is not None:
            entries = anchors.after_anchor(store, name, self._after)
        elif self._newest_first:
            words = needles(self._text) if self._text is not None else []
            if words and isinstance(store, SearchesLines):
                return store.iter_reverse_matching(name, words)
            return store.iter_reverse(name)
        else:
            entries = store.read(name)
        return reversed(entries) if self._newest_first else entries

    def _matches(self, entry: TapeEntry) -> bool:
        if self._kinds and entry.kind not in self._kinds:
            return False
        if self._start is not None or self._end is not None:
            try:
                when = entry.when
            except ValueError:  # a date some other writer spelled its own way cannot be placed in time
                return False
            if when.tzinfo is None:
                when = when.replace(tzinfo=UTC)
            if (self._start and when < self._start) or (self._end and when > self._end):
                return False
        return self._text is None or self._text in entry_text(entry).lower()

    def __iter__(self) -> Iterator[TapeEntry]:
        matches = filter(self._matches, self._source())
        return iter(matches if self._limit is None else itertools.islice(matches, self._limit))

    def all(self) -> list[TapeEntry]:
        return list(self)

    def first(self) -> TapeEntry | None:
        return next(iter(self), None)

    def count(self) -> int:
        return sum(1 for _ in self)

    def to_frame(self) -> pd.DataFrame:
        from bub_nb.tape.frames.frame import entries_to_frame

        return entries_to_frame(self.all(), self.tape)

    def describe(self) -> dict[str, Any]:
        return {k.lstrip("_"): v for k, v in self.__dict__.items() if k != "tape" and v not in (None, (), False)}


class SearchResults(list[TapeEntry]):
    """The entries a search found, newest first; ``cut`` says whether more matched than the limit let in."""

    cut: bool = False


def search_entries(query: TapeQuery, limit: int | None) -> SearchResults:
    """At most ``limit`` matches of ``query`` (every match with ``None``), with whether any were left out."""
    if limit is not None and (type(limit) is not int or limit < 0):
        raise TapeError(f"search limit must be a whole number of entries (0 or more) or None for all, got {limit!r}")
    found = SearchResults(query.all() if limit is None else query.limit(limit + 1).all())
    if limit is not None and len(found) > limit:
        del found[limit:]
        found.cut = True
    return found
