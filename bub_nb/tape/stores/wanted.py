"""The lines a lean read decodes: those of the kinds asked for, dated from a moment on, told apart before decoding.

A lean read (``read_tapes(kinds=..., since=...)``) would otherwise decode every line into payloads and metas
and drop most rows afterwards, so its peak memory and time would be those of the full read. msgspec reads a
line's ``kind``, ``date`` and payload ``name`` without building the rest of it, so a line that cannot be
wanted is never decoded. The picking only ever keeps more than is asked for, never less: anchors are always
kept (each row's phase is read from them), and so are ``notebook`` events (they name a tape's notebook), the
``retract`` and ``unretract`` events (they decide each row's ``retracted``), and every line whose head cannot
be read or whose date is not text; the caller filters the decoded rows exactly.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from bub_nb.tape.events import NOTEBOOK, RETRACT, UNRETRACT

#: Events every lean read keeps: a tape's notebook, and what says which rows are retracted.
_ALWAYS_EVENTS = frozenset({NOTEBOOK, RETRACT, UNRETRACT})


class _Named(msgspec.Struct, gc=False):
    name: Any = None


class _Head(msgspec.Struct, gc=False):
    """What picking a line needs: its kind, its date and its payload's name; anything else is skipped unread."""

    kind: Any = None
    date: Any = None
    payload: _Named | None = None


_HEAD = msgspec.json.Decoder(_Head).decode
_UTC_DATE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.(\d{1,9}))?(?:Z|\+00:00)?", re.ASCII)
_UNREADABLE = (msgspec.DecodeError, ValueError, RecursionError)  # ValueError: not UTF-8


@dataclass(frozen=True)
class WantedLines:
    """Which lines of a tape a read keeps: of ``kinds`` (all when empty), dated at or after ``since``
    (a UTC ``pandas.Timestamp``; any date when ``None``), with anchors and ``notebook`` events always kept."""

    kinds: frozenset[str] = frozenset()
    since: Any = None

    def pick(self, lines: Sequence[bytes]) -> Sequence[bytes]:
        """The lines that may be wanted, in their order: a superset of those wanted, never missing one."""
        if not self.kinds and self.since is None:
            return lines
        try:
            heads: list[_Head | None] = list(map(_HEAD, lines))
        except _UNREADABLE:
            heads = [_head(line) for line in lines]
        kept: list[int] = []
        dated: list[int] = []  # rows kept for their kind whose date decides
        for row, head in enumerate(heads):
            if (
                head is None
                or type(kind := head.kind) is not str
                or kind == "anchor"
                or (kind == "event" and head.payload is not None and head.payload.name in _ALWAYS_EVENTS)
            ):
                kept.append(row)
            elif self.kinds and kind not in self.kinds:
                continue
            elif self.since is not None and type(head.date) is str:
                dated.append(row)
            else:
                kept.append(row)
        if dated:
            kept += self._from_since(dated, [heads[row].date for row in dated])  # type: ignore[union-attr]
            kept.sort()
        return [lines[row] for row in kept]

    def _from_since(self, rows: list[int], dates: list[str]) -> list[int]:
        """Those of ``rows`` dated at or after ``since``, the dates read as a frame's ``date`` column reads them.

        A date in UTC spelled as bub_nb and Bub write it (``2026-02-10T09:30:00.123456+00:00``, ``Z`` or no zone
        too) is placed by its text: its second and its fraction padded to nine digits, whose text order is time
        order. Any other spelling is parsed as the frame parses it (pandas' ISO 8601 reader)."""
        since = self.since
        moment = (
            since.strftime("%Y-%m-%dT%H:%M:%S") + f"{since.microsecond * 1000 + getattr(since, 'nanosecond', 0):09d}"
        )
        kept: list[int] = []
        parse: list[int] = []
        utc = _UTC_DATE.fullmatch
        for number, date in enumerate(dates):
            found = utc(date)
            if found is None:
                parse.append(number)
            elif date[:19] + (found[1] or "").ljust(9, "0") >= moment:
                kept.append(rows[number])
        if parse:
            import pandas as pd

            texts = pd.Series([dates[number] for number in parse], dtype="object")
            moments = pd.to_datetime(texts, utc=True, format="ISO8601", errors="coerce")
            late = (moments >= since).tolist()
            kept += [rows[number] for number, keep in zip(parse, late, strict=True) if keep]
        return kept


def _head(line: bytes) -> _Head | None:
    try:
        return _HEAD(line)
    except _UNREADABLE:
        return None
