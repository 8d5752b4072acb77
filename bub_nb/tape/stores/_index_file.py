"""The anchor index: a sidecar file that lets a tape be read from any anchor without a full scan.

The sidecar sits beside the tape as ``<name>.jsonl.idx`` (Bub ignores files that do not end in
``.jsonl``). It is append-only JSON Lines of arrays, column-wise so that a tape with tens of
thousands of anchors loads in a few milliseconds:

- a header ``{"index": "bub_nb", "version": 2, "ino": …, "dev": …}`` tying it to one tape file;
- ``["a", [id, …], [offset, …], [name, …]]`` for anchors, with the byte offsets of their lines;
- ``["m", [id, …], [offset, …]]`` for seek marks every ``MARK_EVERY`` entries, so any id is near a
  known offset;
- ``["c", size, last_id, entries, bad_lines, tail, anchors]`` checkpoints: everything before
  ``size`` is indexed, ``tail`` (hex) is what the last bytes before ``size`` were, and ``anchors``
  how many anchors lie before ``size`` (so a lost record shows).

On open the last checkpoint is checked against the tape (same file, long enough, the same last
bytes before ``size``); the reader then scans only the bytes written since.
Records after the last checkpoint, or repeated by two writers, are ignored on load. Anything
unexpected in the sidecar makes it stale: it is derived data, so it is simply rebuilt.
"""

from __future__ import annotations

import bisect
import itertools
import operator
import os
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from bub_nb.errors import TapeError
from bub_nb.tape._lines import dumps, load_json
from bub_nb.tape.stores._index import VERSION, IndexState
from bub_nb.tape.stores._nofollow import open_fd, read_bytes


class IndexFile:
    """Reads and appends the sidecar of one tape file.

    ``records`` counts the records the sidecar holds, as far as this process knows: every handoff
    appends a few, so a long session calls for a compact rewrite now and then.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.records = 0

    def load(self, handle: BinaryIO, stat: os.stat_result) -> IndexState | None:
        """The indexed state if the sidecar still describes the open tape file, else ``None``."""
        try:
            raw = read_bytes(self.path)
        except (OSError, TapeError):  # missing, unreadable, or a link: the index is derived, so it is rebuilt
            return None
        records = _parse_records(raw)
        self.records = len(records)
        try:
            return _state_from(records, handle, stat)
        except (TypeError, ValueError, IndexError, KeyError):
            return None

    def rewrite(self, state: IndexState) -> None:
        """Write a fresh sidecar for ``state`` (the sidecar is derived data, so it may be replaced)."""
        lines = [orjson.dumps({"index": "bub_nb", "version": VERSION, "ino": state.ino, "dev": state.dev})]
        lines.extend(_records(state, 0))
        lines.append(_checkpoint(state))
        tmp = self.path.with_name(self.path.name + f".{os.getpid()}.tmp")
        fd = open_fd(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        try:
            os.write(fd, b"\n".join(lines) + b"\n")
        finally:
            os.close(fd)
        os.replace(tmp, self.path)
        self.records = len(lines)

    def append(self, state: IndexState, since_offset: int) -> None:
        """Add the anchors and marks at or after ``since_offset`` and a new checkpoint."""
        lines = [*_records(state, since_offset), _checkpoint(state)]
        fd = open_fd(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
        try:
            size = os.fstat(fd).st_size
            # A writer killed mid-record leaves it without its line break; ours must not be glued on.
            torn = size > 0 and os.pread(fd, 1, size - 1) != b"\n"
            os.write(fd, (b"\n" if torn else b"") + b"\n".join(lines) + b"\n")
        finally:
            os.close(fd)
        self.records += len(lines)

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def _state_from(records: list[Any], handle: BinaryIO, stat: os.stat_result) -> IndexState | None:
    if not records or not isinstance(records[0], dict):
        return None
    header = records[0]
    if header.get("version") != VERSION or (header.get("ino"), header.get("dev")) != (stat.st_ino, stat.st_dev):
        return None
    checkpoint = next((r for r in reversed(records) if isinstance(r, list) and r[:1] == ["c"]), None)
    if checkpoint is None:
        return None
    _, size, last_id, entries, bad, tail, anchor_count = checkpoint
    tail_bytes = bytes.fromhex(tail)
    if size > stat.st_size or os.pread(handle.fileno(), len(tail_bytes), size - len(tail_bytes)) != tail_bytes:
        return None
    state = IndexState(stat.st_ino, stat.st_dev, size, last_id, entries, bad, tail_bytes)
    columns: dict[str, tuple[list[int], list[int], list[Any]]] = {"a": ([], [], []), "m": ([], [], [])}
    for record in records[1:]:
        if type(record) is list and len(record) in (3, 4) and record[0] in columns:
            ids, offsets, names = columns[record[0]]
            if len(record[1]) != len(record[2]):
                return None
            ids.extend(record[1])
            offsets.extend(record[2])
            names.extend(record[3] if len(record) == 4 else ())
    state.anchor_ids, state.anchor_offsets, state.anchor_names = _ordered(*columns["a"], size=size)
    state.mark_ids, state.mark_offsets, _ = _ordered(*columns["m"], size=size)
    if len(state.anchor_ids) != anchor_count or len(state.anchor_names) != anchor_count:
        return None  # a record went missing (a writer killed mid-record): rebuild rather than guess
    if not all(isinstance(name, str) for name in state.anchor_names):
        return None
    return state


def _ordered(
    ids: list[int], offsets: list[int], names: list[Any], *, size: int
) -> tuple[list[int], list[int], list[Any]]:
    """The columns in file order, without repeats, cut at ``size``.

    Two processes may both have appended the records of the same lines, so repeats and a step
    back are possible; they are rare, so the straight case is checked first.
    """
    if not all(map(operator.lt, offsets, offsets[1:])):
        rows = {offset: (entry_id, name) for entry_id, offset, name in itertools.zip_longest(ids, offsets, names)}
        offsets = sorted(rows)
        ids = [rows[offset][0] for offset in offsets]
        names = [rows[offset][1] for offset in offsets] if names else []
    if not all(type(value) is int for value in itertools.chain(ids, offsets)):
        raise TypeError("index columns hold something other than integers")
    cut = bisect.bisect_left(offsets, size)
    return ids[:cut], offsets[:cut], names[:cut]


def _records(state: IndexState, since_offset: int) -> list[bytes]:
    first_anchor = bisect.bisect_left(state.anchor_offsets, since_offset)
    first_mark = bisect.bisect_left(state.mark_offsets, since_offset)
    out = []
    if first_anchor < len(state.anchor_offsets):
        out.append(
            dumps(
                [
                    "a",
                    state.anchor_ids[first_anchor:],
                    state.anchor_offsets[first_anchor:],
                    state.anchor_names[first_anchor:],
                ]
            )
        )
    if first_mark < len(state.mark_offsets):
        out.append(orjson.dumps(["m", state.mark_ids[first_mark:], state.mark_offsets[first_mark:]]))
    return out


def _checkpoint(state: IndexState) -> bytes:
    return orjson.dumps(
        ["c", state.size, state.last_id, state.entries, state.bad_lines, state.tail.hex(), len(state.anchor_ids)]
    )


def _parse_records(raw: bytes) -> list[Any]:
    body = raw[: raw.rfind(b"\n") + 1]  # a torn last record is ignored
    try:
        return list(orjson.loads(b"[" + body.rstrip(b"\n").replace(b"\n", b",") + b"]"))
    except orjson.JSONDecodeError:
        records = []
        for line in body.splitlines():
            try:
                records.append(load_json(line))  # the standard library reads escaped lone surrogates
            except (ValueError, RecursionError):
                continue
        return records
