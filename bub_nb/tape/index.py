"""The anchor index: a sidecar file that lets a tape be read from any anchor without a full scan.

The sidecar sits beside the tape as ``<name>.jsonl.idx`` (Bub ignores files that do not end in
``.jsonl``). It is append-only JSON Lines of small arrays:

- a header ``{"index": "bub_nb", "version": 1, "ino": …, "dev": …}`` tying it to one tape file;
- ``["a", id, offset, name]`` for each anchor, with the byte offset of its line;
- ``["m", id, offset]`` for a seek mark every ``MARK_EVERY`` entries, so any id is near a known offset;
- ``["c", size, last_id, entries, bad_lines]`` checkpoints: everything before ``size`` is indexed.

On open the last checkpoint is checked against the tape (same file, long enough, a line break
at ``size`` and the same last id there); the reader then scans only the bytes written since.
Records after the last checkpoint, or repeated by two writers, are ignored on load.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

VERSION = 1
MARK_EVERY = 1024


@dataclass
class IndexState:
    """What is known about a tape file up to ``size`` bytes."""

    ino: int = 0
    dev: int = 0
    size: int = 0
    last_id: int = 0
    entries: int = 0
    bad_lines: int = 0
    anchor_ids: list[int] = field(default_factory=list)
    anchor_offsets: list[int] = field(default_factory=list)
    anchor_names: list[str] = field(default_factory=list)
    mark_ids: list[int] = field(default_factory=list)
    mark_offsets: list[int] = field(default_factory=list)

    def add_anchor(self, entry_id: int, offset: int, name: str) -> None:
        self.anchor_ids.append(entry_id)
        self.anchor_offsets.append(offset)
        self.anchor_names.append(name)

    def add_mark(self, entry_id: int, offset: int) -> None:
        self.mark_ids.append(entry_id)
        self.mark_offsets.append(offset)

    def needs_mark(self, entry_id: int) -> bool:
        return not self.mark_ids or entry_id - self.mark_ids[-1] >= MARK_EVERY


class IndexFile:
    """Reads and appends the sidecar of one tape file."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self, tape_path: Path, stat: os.stat_result) -> IndexState | None:
        """The indexed state if the sidecar still describes ``tape_path``, else ``None``."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return None
        records = _parse_records(raw)
        if not records or not isinstance(records[0], dict):
            return None
        header = records[0]
        if header.get("version") != VERSION or (header.get("ino"), header.get("dev")) != (
            stat.st_ino,
            stat.st_dev,
        ):
            return None
        checkpoint = next((r for r in reversed(records) if isinstance(r, list) and r[:1] == ["c"]), None)
        if checkpoint is None:
            return None
        _, size, last_id, entries, bad = checkpoint
        if size > stat.st_size or not _ends_with_entry(tape_path, size, last_id):
            return None
        state = IndexState(stat.st_ino, stat.st_dev, size, last_id, entries, bad)
        for record in records[1:]:
            if not isinstance(record, list) or record[0] == "c" or record[2] >= size:
                continue
            if record[0] == "a" and (not state.anchor_offsets or record[2] > state.anchor_offsets[-1]):
                state.add_anchor(record[1], record[2], record[3])
            elif record[0] == "m" and (not state.mark_offsets or record[2] > state.mark_offsets[-1]):
                state.add_mark(record[1], record[2])
        return state

    def rewrite(self, state: IndexState) -> None:
        """Write a fresh sidecar for ``state`` (the sidecar is derived data, so it may be replaced)."""
        lines = [orjson.dumps({"index": "bub_nb", "version": VERSION, "ino": state.ino, "dev": state.dev})]
        lines.extend(_records(state, 0))
        lines.append(_checkpoint(state))
        tmp = self.path.with_name(self.path.name + f".{os.getpid()}.tmp")
        tmp.write_bytes(b"\n".join(lines) + b"\n")
        os.chmod(tmp, 0o600)
        os.replace(tmp, self.path)

    def append(self, state: IndexState, since_offset: int) -> None:
        """Add the anchors and marks at or after ``since_offset`` and a new checkpoint."""
        lines = [*_records(state, since_offset), _checkpoint(state)]
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, b"\n".join(lines) + b"\n")
        finally:
            os.close(fd)

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def _records(state: IndexState, since_offset: int) -> list[bytes]:
    out = [
        orjson.dumps(["a", entry_id, offset, name])
        for entry_id, offset, name in zip(state.anchor_ids, state.anchor_offsets, state.anchor_names, strict=True)
        if offset >= since_offset
    ]
    out.extend(
        orjson.dumps(["m", entry_id, offset])
        for entry_id, offset in zip(state.mark_ids, state.mark_offsets, strict=True)
        if offset >= since_offset
    )
    return out


def _checkpoint(state: IndexState) -> bytes:
    return orjson.dumps(["c", state.size, state.last_id, state.entries, state.bad_lines])


def _parse_records(raw: bytes) -> list[Any]:
    body = raw[: raw.rfind(b"\n") + 1]  # a torn last record is ignored
    try:
        return list(orjson.loads(b"[" + body.rstrip(b"\n").replace(b"\n", b",") + b"]"))
    except orjson.JSONDecodeError:
        records = []
        for line in body.splitlines():
            try:
                records.append(orjson.loads(line))
            except orjson.JSONDecodeError:
                continue
        return records


def _ends_with_entry(tape_path: Path, size: int, last_id: int) -> bool:
    """Whether the tape has a line break at ``size`` and the last entry before it has ``last_id``."""
    if size == 0:
        return True
    with open(tape_path, "rb") as handle:
        back = min(size, 65536)
        handle.seek(size - back)
        tail = handle.read(back)
    if not tail.endswith(b"\n"):
        return False
    for line in reversed(tail[:-1].split(b"\n")):
        try:
            data = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(data, dict) and type(data.get("id")) is int:
            return bool(data["id"] == last_id)
    return True  # no decodable entry in reach; the size and inode checks stand
