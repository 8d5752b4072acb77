"""Indexing a block of tape lines without building them: every line is validated, only anchors are decoded.

A tape's first open has to know which lines are entries (to count them and to find the last id) and
where the anchors are. Decoding every line into dicts costs far more than that needs: msgspec checks a
whole block of lines against the shape of an entry (an int ``id``, a str ``kind``, an object
``payload``) without building the payloads, reading only each line's ``kind``. So a payload that
merely contains the text of an anchor is not one, however the line is spaced (Bub's ``", "`` or
bub_nb's compact form). The anchor lines, which are rare, are then decoded alone, for their names.
Whatever this fast path cannot vouch for (a line that is not UTF-8, not JSON, not an entry, a blank
line, a line holding two entries or part of one, an id beyond 64 bits, a name msgspec does not read)
sends the whole block to the plain decode, so the result is always exactly what decoding every line gives.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any

import msgspec

from bub_nb.tape._lines import MAX_DEPTH

_MARK_ROWS = 64  # every how many lines one is considered for a seek mark
_LINE_BREAK = 10
_OPEN, _CLOSE, _OPEN_ARRAY = ord("{"), ord("}"), ord("[")
_INT64 = 1 << 63


class _Object(msgspec.Struct):
    """Any JSON object: its members are checked for syntax and skipped."""


class _Head(msgspec.Struct, gc=False):
    """What makes a line an entry, by Bub's test: an int id, a str kind and an object payload."""

    id: int
    kind: str
    payload: _Object


class _Named(msgspec.Struct, gc=False):
    name: Any = None


class _AnchorHead(msgspec.Struct, gc=False):
    id: int
    kind: str
    payload: _Named


_HEADS = msgspec.json.Decoder(_Head)
_ANCHORS = msgspec.json.Decoder(_AnchorHead)
_ID = operator.attrgetter("id")
_KIND = operator.attrgetter("kind")


@dataclass
class BlockScan:
    """What a block of complete lines adds to the index; offsets are relative to the block."""

    entries: int = 0
    last_id: int = 0
    anchors: list[tuple[int, int, str]] = field(default_factory=list)  # (id, offset, name)
    marks: list[tuple[int, int]] = field(default_factory=list)  # (id, offset)
    first_id: int = 0
    disorder: tuple[int, int] | None = None  # the first id that does not exceed the one before it: (before, it)


def scan_block(data: bytes, end: int, last_mark: int, mark_every: int) -> BlockScan | None:
    """Index ``data[:end]`` (complete lines, each ending in a line break), or ``None`` when it needs the plain
    decode. (Bytes after ``end`` are the start of a line still to come; leaving them in spares a copy.)

    ``last_mark`` is the id of the last seek mark before the block; a new mark goes on a line whose id
    is at least ``mark_every`` past it.
    """
    import numpy as np  # only a scan needs it; opening an indexed tape stays light

    if not end:
        return BlockScan()
    if not data.isascii():
        try:  # what json.loads accepts after orjson declines: UTF-8, surrogates allowed
            data[:end].decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            return None
    try:
        with memoryview(data) as view:
            heads = _HEADS.decode_lines(view[:end])
    except (msgspec.DecodeError, RecursionError):
        return None
    bytes_ = np.frombuffer(data, np.uint8, count=end)
    breaks = np.flatnonzero(bytes_ == _LINE_BREAK)
    if len(heads) != len(breaks) or not _one_object_per_line(data, breaks):
        return None
    if _may_nest_too_deep(bytes_, breaks):
        return None  # the plain decode applies the nesting rule, line by line
    ids = list(map(_ID, heads))
    highest = max(ids)
    if highest >= _INT64 or min(ids) < -_INT64:  # orjson does not read these as ints: leave them to it
        return None
    starts = _Starts(breaks)
    anchors = _anchors(data, starts, breaks, _anchor_rows(list(map(_KIND, heads))))
    if anchors is None:
        return None
    marks = []
    for row in range(0, len(ids), _MARK_ROWS):
        if ids[row] - last_mark >= mark_every:
            marks.append((ids[row], starts[row]))
            last_mark = ids[row]
    return BlockScan(len(heads), highest, anchors, marks, ids[0], _disorder(np.fromiter(ids, np.int64, len(ids))))


def _disorder(ids: Any) -> tuple[int, int] | None:
    """The first id that does not exceed the one before it, with that one, if any."""
    import numpy as np

    steps = np.flatnonzero(ids[1:] <= ids[:-1])
    return (int(ids[steps[0]]), int(ids[steps[0] + 1])) if len(steps) else None


def _may_nest_too_deep(bytes_: Any, breaks: Any) -> bool:
    """Whether some line holds more than ``MAX_DEPTH`` opening brackets, so may nest past the bound: counted for
    the whole block at once, as every line must be checked and nearly none comes close."""
    import numpy as np

    openers = np.cumsum((bytes_ == _OPEN_ARRAY) | (bytes_ == _OPEN))
    per_line = np.diff(openers[breaks], prepend=0)
    return bool(per_line.max(initial=0) > MAX_DEPTH)


def _one_object_per_line(data: bytes, breaks: Any) -> bool:
    """Whether each line is whole objects, as the plain decode reads it, rather than what ``decode_lines`` reads.

    ``decode_lines`` takes line breaks for mere whitespace: two entries on one line and one entry split over
    two lines count as two lines' worth. When every line starts with ``{`` and ends with ``}``, no object
    spans a break (the line before a break inside an object would end in ``{``, ``[``, ``,``, ``:`` or a
    scalar, or in a ``}`` that the next line follows with ``,``, ``]`` or ``}``), so each line holds at least
    one whole object, and as many objects as lines means exactly one a line. Anything else (a blank line,
    spaces around an entry, a ``\\r`` before the break) is left to the plain decode.
    """
    import numpy as np

    bytes_ = np.frombuffer(data, np.uint8, count=int(breaks[-1]) + 1)
    firsts = bytes_[np.concatenate(([0], breaks[:-1] + 1))]
    lasts = bytes_[breaks - 1]
    return bool((firsts == _OPEN).all() and (lasts == _CLOSE).all())


class _Starts:
    """Where each line starts, worked out only for the lines asked about."""

    def __init__(self, breaks: Any) -> None:
        self._breaks = breaks

    def __getitem__(self, row: int) -> int:
        return int(self._breaks[row - 1]) + 1 if row else 0


def _anchor_rows(kinds: list[str]) -> list[int]:
    rows: list[int] = []
    row = -1
    while True:
        try:
            row = kinds.index("anchor", row + 1)
        except ValueError:
            return rows
        rows.append(row)


def _anchors(data: bytes, starts: _Starts, breaks: Any, rows: list[int]) -> list[tuple[int, int, str]] | None:
    """The anchor lines, decoded alone and in one call: ``(id, offset, name)``, names read as Bub reads them."""
    if not rows:
        return []
    try:
        found = _ANCHORS.decode_lines(b"\n".join([data[starts[row] : breaks[row]] for row in rows]))
    except (msgspec.DecodeError, RecursionError):  # a name msgspec does not read (a lone surrogate): decode plainly
        return None
    if len(found) != len(rows) or any(head.kind != "anchor" for head in found):
        return None
    return [
        (head.id, starts[row], head.payload.name if type(head.payload.name) is str else "")
        for head, row in zip(found, rows, strict=True)
    ]
