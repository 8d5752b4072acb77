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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from bub_nb.tape._lines import anchor_name, decode_records, dumps, gc_paused, load_json
from bub_nb.tape.stores._scan import scan_block
from bub_nb.tape.stores.protocol import AnchorList

VERSION = 2
MARK_EVERY = 1024
# Bytes read at a time by every whole-file pass (index, decode, search). A megabyte stays in the CPU's cache
# while it is scanned or split, and its buffer is reused; 4 MB blocks were 15-25% slower at 1M entries.
READ_CHUNK = 1 << 20
TAIL_BYTES = 64


@dataclass
class IndexState:
    """What is known about a tape file up to ``size`` bytes.

    ``tail`` holds the last bytes before ``size``: if they are still there, the file is still the
    one that was indexed (a file replaced in place, even under the same inode, fails this check).
    """

    ino: int = 0
    dev: int = 0
    size: int = 0
    last_id: int = 0
    entries: int = 0
    bad_lines: int = 0
    tail: bytes = b""
    anchor_ids: list[int] = field(default_factory=list)
    anchor_offsets: list[int] = field(default_factory=list)
    anchor_names: list[str] = field(default_factory=list)
    mark_ids: list[int] = field(default_factory=list)
    mark_offsets: list[int] = field(default_factory=list)

    def add_anchor(self, entry_id: int, offset: int, name: str) -> None:
        self.anchor_ids.append(entry_id)
        self.anchor_offsets.append(offset)
        self.anchor_names.append(name)

    def anchor_refs(self) -> AnchorList:
        """The anchors indexed so far, as a sequence that later appends do not change."""
        return AnchorList(self.anchor_ids, self.anchor_names, len(self.anchor_ids))

    def add_mark(self, entry_id: int, offset: int) -> None:
        self.mark_ids.append(entry_id)
        self.mark_offsets.append(offset)

    def needs_mark(self, entry_id: int) -> bool:
        return not self.mark_ids or entry_id - self.mark_ids[-1] >= MARK_EVERY

    def scan(self, handle: BinaryIO, end: int) -> None:
        """Index the complete lines between ``size`` and ``end`` of the open tape file."""
        position = self.size
        with gc_paused():
            while position < end:
                data = os.pread(handle.fileno(), min(READ_CHUNK, end - position), position)
                cut = data.rfind(b"\n") + 1
                if not data or (not cut and len(data) < READ_CHUNK):
                    break  # only an unfinished line is left
                if not cut:  # a line longer than a chunk: read on until it ends
                    more = os.pread(handle.fileno(), end - position, position)
                    cut = more.rfind(b"\n") + 1
                    if not cut:
                        break
                    data = more
                position = self.add_block(data, cut, position)
        if position != self.size:
            self.size = position
            self.read_tail(handle)

    def add_block(self, data: bytes, end: int, position: int) -> int:
        """Index the complete lines ``data[:end]``, which start at byte ``position``; returns where they end."""
        found = scan_block(data, end, self.mark_ids[-1] if self.mark_ids else -MARK_EVERY, MARK_EVERY)
        if found is None:
            return self.add_lines(data[: end - 1].split(b"\n"), position) if end else position
        if found.entries:
            self.entries += found.entries
            self.last_id = max(self.last_id, found.last_id)
            for entry_id, offset, name in found.anchors:
                self.add_anchor(entry_id, position + offset, name)
            for entry_id, offset in found.marks:
                self.add_mark(entry_id, position + offset)
        return position + end

    def add_lines(self, lines: list[bytes], position: int) -> int:
        """Index complete lines that start at byte ``position``; returns where they end."""
        offsets = list(itertools.accumulate((len(line) + 1 for line in lines), initial=position))
        records = decode_records(lines)
        bad = [line for line, record in zip(lines, records, strict=True) if record is None]
        self.bad_lines += sum(1 for line in bad if line.strip())  # blank lines are not entries, nor damage
        good = [(offset, record) for offset, record in zip(offsets, records, strict=False) if record is not None]
        if not good:
            return offsets[-1]
        self.entries += len(good)
        self.last_id = max(self.last_id, *(record["id"] for _, record in good))
        for offset, record in good:
            if record["kind"] == "anchor":
                self.add_anchor(record["id"], offset, anchor_name(record["payload"]))
        last_mark = self.mark_ids[-1] if self.mark_ids else -MARK_EVERY
        for offset, record in good:
            if record["id"] - last_mark >= MARK_EVERY:
                self.add_mark(record["id"], offset)
                last_mark = record["id"]
        return offsets[-1]

    def read_tail(self, handle: BinaryIO) -> None:
        """Remember the bytes just before ``size`` in the open tape file."""
        begin = max(0, self.size - TAIL_BYTES)
        self.tail = os.pread(handle.fileno(), self.size - begin, begin)

    def describes(self, handle: BinaryIO, stat: os.stat_result) -> bool:
        """Whether the open tape file is still the one indexed, grown or not."""
        if (stat.st_ino, stat.st_dev) != (self.ino, self.dev) or stat.st_size < self.size:
            return False
        return os.pread(handle.fileno(), len(self.tail), self.size - len(self.tail)) == self.tail


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
            raw = self.path.read_bytes()
        except OSError:
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
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, b"\n".join(lines) + b"\n")
        finally:
            os.close(fd)
        os.replace(tmp, self.path)
        self.records = len(lines)

    def append(self, state: IndexState, since_offset: int) -> None:
        """Add the anchors and marks at or after ``since_offset`` and a new checkpoint."""
        lines = [*_records(state, since_offset), _checkpoint(state)]
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
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
