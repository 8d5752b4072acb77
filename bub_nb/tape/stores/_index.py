"""The anchor index in memory: where each anchor and every ``MARK_EVERY``-th entry starts in a tape file.

It follows the file as lines are scanned or appended; ``_index_file`` keeps it in a sidecar between processes.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import BinaryIO

from bub_nb.tape._lines import anchor_name, decode_records, gc_paused
from bub_nb.tape.entries import TapeEntry
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
    disorder: tuple[int, int] | None = None
    """The first id read that does not exceed the one before it, with that one: ids that repeat or go back
    (two writers' lines kept side by side, a merge that kept both), which no read may serve."""

    def _note_order(self, first: int, disorder: tuple[int, int] | None) -> None:
        if self.disorder is None:
            self.disorder = (self.last_id, first) if self.entries and first <= self.last_id else disorder

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
            self._note_order(found.first_id, found.disorder)
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
        ids = [record["id"] for _, record in good]
        steps = (pair for pair in itertools.pairwise(ids) if pair[1] <= pair[0])
        self._note_order(ids[0], next(steps, None))
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

    def record_append(self, torn: bytes | None, stored: Sequence[TapeEntry], lines: Sequence[bytes], at: int) -> None:
        """Index what one append wrote at offset ``at``: the torn line it ended, if any, then its own lines."""
        position = at
        if torn is not None:  # now a line of its own, ended by the append's line break
            position = self.add_lines([torn], self.size)
        for entry, line in zip(stored, lines, strict=True):
            if entry.kind == "anchor":
                self.add_anchor(entry.id, position, anchor_name(entry.payload))
            if self.needs_mark(entry.id):
                self.add_mark(entry.id, position)
            position += len(line)
        self.entries += len(stored)
        self.last_id = max(self.last_id, stored[-1].id)
        self.size = position
        self.tail = (b"".join(lines[-2:]))[-TAIL_BYTES:]

    def describes(self, handle: BinaryIO, stat: os.stat_result) -> bool:
        """Whether the open tape file is still the one indexed, grown or not."""
        if (stat.st_ino, stat.st_dev) != (self.ino, self.dev) or stat.st_size < self.size:
            return False
        return os.pread(handle.fileno(), len(self.tail), self.size - len(self.tail)) == self.tail
