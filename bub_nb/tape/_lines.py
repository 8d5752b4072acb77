"""Tape lines in bulk: decoding records the way Bub's reader accepts them, fast enough for large tapes."""

from __future__ import annotations

import contextlib
import gc
import json
import re
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, BinaryIO, Final

import msgspec
import orjson

Record = dict[str, Any]
_BULK_OBJECTS = 5_000


def record_date(data: Record) -> str:
    """The entry's ``date``; older lines carry a float ``timestamp`` instead, turned into the same ISO form.

    A line with neither, or with a timestamp no date can hold, gets ``""``: no date, as unreadable as a
    ``date`` some writer garbled, and read alike (``NaT`` in a frame, ``ValueError`` from ``entry.when``)."""
    date = data.get("date")
    if isinstance(date, str):
        return date
    stamp = data.get("timestamp")
    if not isinstance(stamp, int | float) or isinstance(stamp, bool):
        return ""
    try:
        return datetime.fromtimestamp(stamp, tz=UTC).isoformat()
    except (OverflowError, OSError, ValueError):  # an absurd timestamp must not make the tape unreadable
        return ""


def as_record(data: Any) -> Record | None:
    """``data`` normalised to ``{id, kind, payload, meta, date}`` if it is a tape entry, else ``None``.

    The test is Bub's: an int ``id``, a str ``kind`` and a dict ``payload``; ``meta`` defaults to ``{}``.
    """
    if not isinstance(data, dict):
        return None
    entry_id, kind, payload = data.get("id"), data.get("kind"), data.get("payload")
    if type(entry_id) is not int or not isinstance(kind, str) or not isinstance(payload, dict):
        return None
    if not -(2**63) <= entry_id < 2**63:  # no store writes such an id, and no index or frame column holds one
        return None
    meta = data.get("meta")
    date = data.get("date")
    if isinstance(meta, dict) and isinstance(date, str) and len(data) == 5:
        return data  # the common case: already exactly the five fields
    return {
        "id": entry_id,
        "kind": kind,
        "payload": payload,
        "meta": meta if isinstance(meta, dict) else {},
        "date": date if isinstance(date, str) else record_date(data),
    }


# orjson reads an integer beyond 64 bits as a float without a word; such a number has 20 digits or more,
# or 19 after a minus sign (below -2**63, which has 19 digits, orjson has no signed type to hold it).
_DIGITS_AS_ZERO = bytes(ord("0") if chr(byte).isdigit() and byte < 128 else byte for byte in range(256))
_LONG_INTEGER = b"0" * 20
_LONG_NEGATIVE = b"-" + b"0" * 19


def _has_long_integer(line: bytes) -> bool:
    digits = line.translate(_DIGITS_AS_ZERO)
    return _LONG_INTEGER in digits or _LONG_NEGATIVE in digits


def load_json(line: bytes | str) -> Any:
    """Decode one JSON text exactly; raises ``ValueError`` when it is not one.

    orjson reads nearly every line. Python's ``json`` (Bub's writer) also emits ``NaN``,
    ``Infinity`` and integers beyond 64 bits, which only the standard library reads back
    (orjson would turn those integers into floats).
    """
    raw = line.encode() if isinstance(line, str) else line
    if _has_long_integer(raw):
        return json.loads(raw)
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw)


MAX_DEPTH: Final = 200
"""How deep a tape line may nest arrays and objects (the entry's own object is level 1). A deeper line is not an
entry: it is skipped and counted like a line that is not JSON, so no view, frame or walk over its values meets a
``RecursionError`` later."""

_MIN_DEEP_BYTES: Final = 2 * MAX_DEPTH + 2  # the shortest JSON text nested MAX_DEPTH + 1 deep: "[[...]]"
_BRACKETS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def too_deep(line: bytes) -> bool:
    """The one nesting rule: whether ``line``, a JSON text, nests arrays and objects more than :data:`MAX_DEPTH`
    levels deep. Brackets inside strings do not count. A short line, or one with few brackets, is answered
    without looking further; any other is scanned once."""
    if len(line) < _MIN_DEEP_BYTES or line.count(b"[") + line.count(b"{") <= MAX_DEPTH:
        return False
    depth = 0
    for match in _BRACKETS.finditer(line):
        mark = match.group()
        if mark in (b"[", b"{"):
            depth += 1
            if depth > MAX_DEPTH:
                return True
        elif mark in (b"]", b"}"):
            depth -= 1
    return False


def deep_lines(lines: Sequence[bytes]) -> bool:
    """Whether any of ``lines`` is :func:`too_deep`: the bulk decoders then take the block line by line. (Counting
    each long line's brackets costs about a tenth of decoding it; a vectorised count over the block cost more.)"""
    return any(too_deep(line) for line in lines if len(line) >= _MIN_DEEP_BYTES)


def decode_record(line: bytes) -> Record | None:
    """One line decoded into a record, or ``None`` when it is not JSON, not a tape entry, or nested past
    :data:`MAX_DEPTH`."""
    if too_deep(line):
        return None
    try:
        return as_record(load_json(line))
    except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested beyond reason
        return None


def has_long_integer(lines: Sequence[bytes]) -> bool:
    """Whether any of ``lines`` may hold an integer beyond 64 bits: one check over the block, not one per line."""
    return _has_long_integer(b"\n".join(lines))


def decode_records(lines: list[bytes]) -> list[Record | None]:
    """``decode_record`` for many lines at once, with the common case (valid, five fields) inline."""
    if has_long_integer(lines) or deep_lines(lines):  # rare: read exactly, line by line
        return [decode_record(line) for line in lines]
    try:
        decoded: list[Any] = [orjson.loads(line) for line in lines]
    except orjson.JSONDecodeError:  # a bad or blank line somewhere: take them one by one
        decoded = [decode_record(line) for line in lines]
    return [
        data
        if type(data) is dict
        and len(data) == 5
        and type(data.get("id")) is int
        and type(data.get("kind")) is str
        and type(data.get("payload")) is dict
        and type(data.get("meta")) is dict
        and type(data.get("date")) is str
        else as_record(data)
        for data in decoded
    ]


def anchor_name(payload: dict[str, Any]) -> str:
    """An anchor's name as the index keeps it (``""`` when the line has none or a non-string one)."""
    name = payload.get("name")
    return name if isinstance(name, str) else ""


def line_blocks(handle: BinaryIO, size: int, block: int, *, first: int | None = None) -> Iterator[list[bytes]]:
    """The complete lines (without line breaks) in the next ``size`` bytes of ``handle``, one list per block read;
    an unfinished last line is left out, as the index leaves it.

    Blocks are ``block`` bytes, or start at ``first`` and grow fourfold up to ``block`` (for a reader that may
    stop early). Each block is split as it was read, and only the line its end cuts is joined to the next one:
    no block is copied before it is split, which at a million lines is about half the time of reading them.
    """
    carry, want = b"", first or block
    while size > 0:
        chunk = handle.read(min(size, want))
        if not chunk:
            return
        size -= len(chunk)
        want = min(want * 4, block)
        lines = chunk.split(b"\n")
        if len(lines) == 1:  # no line ends in this block: a line longer than a block
            carry += chunk
            continue
        lines[0] = carry + lines[0]
        carry = lines.pop()
        yield lines


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Hold the cyclic garbage collector while decoding many records.

    Decoding only builds acyclic dicts and lists, but the collector walks every new object as
    they pile up, which more than doubles the time of a large read. On the way out the new
    objects join the oldest generation directly (``freeze`` then ``unfreeze``), as the long-lived
    data they are, instead of being walked all at once by the next young collection. (Only
    after a bulk read: a small one leaves the collector's generations as they were.)
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if gc.get_count()[0] > _BULK_OBJECTS:
            gc.freeze()
            gc.unfreeze()
        if enabled:
            gc.enable()


def _json_default(value: Any) -> Any:
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    if hasattr(value, "model_dump"):
        return value.model_dump()
    return str(value)


def dumps(value: Any) -> bytes:
    """JSON as a tape line holds it: compact UTF-8, as Bub's reader reads it, whatever the value holds."""
    try:
        return orjson.dumps(value, default=_json_default, option=orjson.OPT_NON_STR_KEYS)
    except orjson.JSONEncodeError:
        # Integers beyond 64 bits, and lone surrogates: the standard library writes them, as Bub
        # does, a surrogate as a \u escape since it has no UTF-8 form.
        text = json.dumps(value, default=_json_default, ensure_ascii=False, separators=(",", ":"))
        try:
            return text.encode()
        except UnicodeEncodeError:
            return json.dumps(value, default=_json_default, separators=(",", ":")).encode()


class _Entry(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """A line that is exactly an entry: the five fields, each of its type, and nothing else."""

    id: int
    kind: str
    payload: dict[str, Any]
    meta: dict[str, Any]
    date: str


class _StampedEntry(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """A line of an older writer: a float ``timestamp`` where an entry has its ``date``."""

    id: int
    kind: str
    payload: dict[str, Any]
    timestamp: int | float
    meta: dict[str, Any] = msgspec.field(default_factory=dict)


ENTRY = msgspec.json.Decoder(_Entry).decode
_STAMPED = msgspec.json.Decoder(_StampedEntry).decode
NOT_TYPED = (msgspec.DecodeError, ValueError, RecursionError)  # ValueError: not UTF-8


def typed_fields(line: bytes) -> tuple[int, str, dict[str, Any], dict[str, Any], str] | None:
    """The five fields of a line of a typed shape, else ``None`` (also for a line nested past the bound)."""
    if too_deep(line):
        return None
    try:
        entry = ENTRY(line)
    except NOT_TYPED:
        pass
    else:
        return entry.id, entry.kind, entry.payload, entry.meta, entry.date
    try:
        stamped = _STAMPED(line)
    except NOT_TYPED:
        return None
    return stamped.id, stamped.kind, stamped.payload, stamped.meta, record_date({"timestamp": stamped.timestamp})


def replacing_bad_bytes(line: bytes) -> Record | None:
    """The entry a line holds once its bytes that are not UTF-8 are read as U+FFFD; ``None`` for a line that
    is UTF-8 (its damage is something else) or no entry even so."""
    try:
        line.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return decode_record(line.decode("utf-8", "replace").encode("utf-8", "surrogatepass"))
    return None
