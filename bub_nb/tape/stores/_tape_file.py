"""One tape file, appended under a cross-process lock and read through its anchor index.

Each batch is one ``O_APPEND`` write under the lock, so two kernels never interleave bytes or reuse ids. A
Bub-style writer that appends whole lines without the lock cannot interleave bytes with us either, and what it
appended before we lock is read first, so our ids continue after its. No lock orders two writers that both pick
"last id + 1" while only one locks; we never reuse an id, and the index reads the foreign lines. The file is never
rewritten: a torn last line is left and the next append starts on a fresh line; bad lines are skipped, counted.

The module reads bottom up: how the files of a tape folder are opened (never through a symbolic link), the anchor
index in memory (``IndexState``), its sidecar (``IndexFile``), then ``TapeFile``, which keeps the two current.

**Opening without following a link.** A tape folder is shared with other programs; a link planted at
``<name>.jsonl`` must not turn an append into a write to ``~/.bashrc``, nor a read into a read of any file the link
names. Every open here adds ``O_NOFOLLOW``, so the last part of the path must be the file itself; the folder was
resolved once, when its store was made. The lineage file and the one rewrite a file allows open the same way.

**The anchor index** records where each anchor and every ``MARK_EVERY``-th entry starts in the tape file. It
follows the file as lines are scanned or appended, and a sidecar keeps it between processes. The sidecar sits
beside the tape as ``<name>.jsonl.idx`` (Bub ignores files that do not end in ``.jsonl``). It is append-only JSON
Lines of arrays, column-wise so that a tape with tens of thousands of anchors loads in a few milliseconds:

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
import contextlib
import errno
import itertools
import operator
import os
import threading
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import orjson
from filelock import FileLock, Timeout

from bub_nb.errors import TapeError, TapeOrderWarning
from bub_nb.tape._lines import (
    Record,
    anchor_name,
    decode_record,
    decode_records,
    dumps,
    gc_paused,
    line_blocks,
    load_json,
)
from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.stores._scan import scan_block
from bub_nb.tape.stores.columns import Columns, decode_columns
from bub_nb.tape.stores.protocol import AnchorList, AnchorRef, StoreStats
from bub_nb.tape.stores.search import candidate_lines
from bub_nb.tape.stores.wanted import WantedLines

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def linked_file_error(path: str | Path) -> TapeError:
    return TapeError(
        f"{str(path)!r} is a symbolic link; bub_nb opens tape, index and lineage files only as themselves, "
        "never through a link"
    )


def open_fd(path: str | Path, flags: int, mode: int = 0o600) -> int:
    """``os.open`` that refuses a symbolic link at ``path`` with a one-line :class:`TapeError`."""
    try:
        return os.open(path, flags | NOFOLLOW, mode)
    except OSError as error:
        if error.errno == errno.ELOOP or (error.errno == errno.EMLINK and os.path.islink(path)):
            raise linked_file_error(path) from None
        raise


def open_binary(path: str | Path) -> BinaryIO:
    """``open(path, "rb")``, refusing a symbolic link."""
    return open(path, "rb", opener=lambda name, flags: open_fd(name, flags))


def read_bytes(path: str | Path) -> bytes:
    """``Path.read_bytes``, refusing a symbolic link."""
    with open_binary(path) as handle:
        return handle.read()


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


_FIRST_CHUNK = 1 << 14
_REVERSE_BLOCK = 1 << 18
_SEARCH_BLOCK = READ_CHUNK
_PERSIST_EVERY_BYTES = 1 << 20
_COMPACT_AFTER_RECORDS = 512
_TORN_CHECKS = 5
_TORN_WAIT = 0.002


class TapeFile:
    """One tape file with its in-memory index, kept current with every other writer."""

    def __init__(self, path: Path, *, fsync: bool = False, keep_index: bool = True) -> None:
        self.path = path
        self.fsync = fsync
        self.keep_index = keep_index  # an archive is only read: no sidecar is written beside it
        self._index_file = IndexFile(path.with_name(path.name + ".idx"))
        self._file_lock = FileLock(str(path) + ".lock", mode=0o600)
        self._lock_pid = os.getpid()
        self._mutex = threading.RLock()
        self._state: IndexState | None = None
        self._seen: tuple[int, int, int, int] | None = None  # (ino, dev, size, mtime) at the last look
        self._persisted_size = 0
        self._file_size = 0
        self._read_past: tuple[int, int] | None = None  # ids out of order that appeared past what this reader read

    @property
    def _lock(self) -> FileLock:
        """The cross-process lock; a forked child (multiprocessing in a notebook) needs its own."""
        if self._lock_pid != os.getpid():
            self._file_lock = FileLock(str(self.path) + ".lock", mode=0o600)
            self._lock_pid = os.getpid()
        return self._file_lock

    # -- keeping the index current ---------------------------------------------------------------

    def state(self) -> IndexState:
        """The index, brought up to date with whatever was appended since the last look."""
        with self._mutex:
            try:
                stat = os.stat(self.path, follow_symlinks=False)
            except FileNotFoundError:
                self._state, self._seen, self._persisted_size, self._file_size = IndexState(), None, 0, 0
                return self._state
            seen = (stat.st_ino, stat.st_dev, stat.st_size, stat.st_mtime_ns)
            state = self._state
            if state is not None and seen == self._seen:
                return state
            with open_binary(self.path) as handle:
                fresh = state is None or not state.describes(handle, stat)
                if state is None or fresh:  # a first look, or a file replaced since
                    loaded = self._index_file.load(handle, stat)
                    self._persisted_size = loaded.size if loaded else 0
                    state = self._state = loaded or IndexState(stat.st_ino, stat.st_dev)
                    self._read_past = None
                in_order = state.disorder is None
                if stat.st_size > state.size:
                    state.scan(handle, stat.st_size)
            self._file_size, self._seen = stat.st_size, seen
            if not fresh and in_order and state.disorder is not None:
                self._read_on_past(state.disorder)
            self._maybe_persist(state)
            return state

    def _read_on_past(self, disorder: tuple[int, int]) -> None:
        """Ids out of order appeared past what this reader had already read: a writer that takes no lock (Bub
        0.5) picked an id while we wrote ours. Refusing now would stop this reader beside a live Bub, so it reads
        on, the lines as they are, and its own next append follows the highest id; one line says so."""
        self._read_past = disorder
        before, after = disorder
        warnings.warn(
            f"Tape {self.path.name[: -len('.jsonl')]!r} now has ids out of order: {after} follows {before}, written "
            "beside a writer that takes no lock; reading on as written, and new entries follow the highest id. "
            "A fresh open refuses it until `bub-nb tapes merge` renumbers them",
            TapeOrderWarning,
            stacklevel=2,
        )

    def checked_state(self) -> IndexState:
        """The index, if the file's ids increase strictly; ids that repeat or go back are refused, never served.

        A reader that had the file open before the ids went out of order reads on (see ``_read_on_past``)."""
        state = self.state()
        if state.disorder is not None and state.disorder != self._read_past:
            before, after = state.disorder
            raise TapeError(
                f"Tape {self.path.name[: -len('.jsonl')]!r} has ids out of order: {after} follows {before} in "
                f"{str(self.path)!r}; two writers' entries were kept side by side. Nothing is read from it until "
                "`bub-nb tapes merge` renumbers them"
            )
        return state

    def _maybe_persist(self, state: IndexState) -> None:
        if not self.keep_index or state.disorder is not None:
            return
        new_anchor = bool(state.anchor_offsets) and state.anchor_offsets[-1] >= self._persisted_size
        if state.size == self._persisted_size or (
            state.size - self._persisted_size < _PERSIST_EVERY_BYTES and not new_anchor
        ):
            return
        try:
            self._lock.acquire(timeout=0)
        except (Timeout, OSError):
            return  # another writer is busy (or the folder is read-only); a later look persists instead
        try:
            if os.stat(self.path).st_size != self._file_size:
                return  # appended since our look: persisting now could drop another writer's records
            if self._persisted_size == 0 or self._index_file.records > _COMPACT_AFTER_RECORDS:
                self._index_file.rewrite(state)
            else:
                self._index_file.append(state, self._persisted_size)
            self._persisted_size = state.size
        except (OSError, TapeError):  # a sidecar that is a link is not written through
            pass  # the index still serves this process from memory
        finally:
            self._lock.release()

    # -- writing ----------------------------------------------------------------------------------

    def append(self, entries: Sequence[TapeEntry]) -> list[TapeEntry]:
        if not entries:
            return []
        with self._mutex, self._lock:
            state = self._settled_state()
            observed = self._file_size
            torn = self._torn_line(state, observed)
            first_id = state.last_id + 1
            if torn is not None and (record := decode_record(torn)) is not None:
                # A crash just before the line break leaves a whole entry; its id is taken.
                first_id = max(first_id, record["id"] + 1)
            stored = [entry.with_id(number) for number, entry in enumerate(entries, start=first_id)]
            lines = [entry.to_line() for entry in stored]
            data = b"".join([b"\n", *lines] if torn is not None else lines)
            landed, stat = self._write(data)
            if landed == observed:
                state.record_append(torn, stored, lines, observed)
                state.ino, state.dev = stat.st_ino, stat.st_dev
                if stat.st_size == state.size:
                    self._seen = (stat.st_ino, stat.st_dev, stat.st_size, stat.st_mtime_ns)
                    self._file_size = stat.st_size
                else:
                    self._seen = None
            else:
                # Another writer (one that does not take our lock) appended in between: leave the
                # index where it was, so the next look reads its lines and ours from the file.
                self._seen = None
            self._maybe_persist(state)
            return stored

    def _settled_state(self) -> IndexState:
        """The index, after giving an unfinished last line a moment to finish.

        Bytes after the last line break are either a crash's torn line or a line another writer
        is writing right now; only the first stays the same while we wait.
        """
        state = self.state()
        for _ in range(_TORN_CHECKS):
            if self._file_size == state.size:
                break
            observed = self._file_size
            time.sleep(_TORN_WAIT)
            state = self.state()
            if self._file_size == observed:
                break
        return state

    def _torn_line(self, state: IndexState, observed: int) -> bytes | None:
        """The unfinished bytes after the last line break, if any."""
        if observed <= state.size:
            return None
        with open_binary(self.path) as handle:
            return os.pread(handle.fileno(), observed - state.size, state.size)

    def _write(self, data: bytes) -> tuple[int | None, os.stat_result]:
        """Append ``data`` with ``O_APPEND``; returns where it landed (``None`` if split by another writer)."""
        try:
            fd = open_fd(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o600)
            os.fchmod(fd, 0o600)  # whatever the umask says: tapes hold conversations
        except FileExistsError:
            fd = open_fd(self.path, os.O_WRONLY | os.O_APPEND)
        try:
            written = os.write(fd, data)
            landed: int | None = os.lseek(fd, 0, os.SEEK_CUR) - written
            while written < len(data):  # a short write: a full disk, or a signal
                more = os.write(fd, data[written:])
                start = os.lseek(fd, 0, os.SEEK_CUR) - more
                if start != landed + written:  # type: ignore[operator]
                    landed = None
                written += more
            if self.fsync:
                os.fsync(fd)
            return landed, os.fstat(fd)
        finally:
            os.close(fd)

    def reset(self, *, archive_to: Path | None = None) -> str | None:
        """Start the file over; with ``archive_to`` the old file is moved there first, else it is deleted."""
        with self._mutex, self._lock:
            target = None
            if self.path.exists():
                if archive_to is not None:
                    target = archive_to
                    os.replace(self.path, target)
                else:
                    self.path.unlink()
            self._index_file.remove()
            self._read_past = None
            self._state, self._seen, self._persisted_size, self._file_size = None, None, 0, 0
            return str(target) if target else None

    # -- reading ----------------------------------------------------------------------------------

    def records(self, start: int = 1, stop: int | None = None) -> list[Record]:
        """Decoded lines with ``start <= id < stop``, oldest first, as plain dicts."""
        state = self.checked_state()
        if state.size == 0 or (stop is not None and stop <= start) or start > state.last_id:
            return []
        offset = self._seek_offset(state, start)
        out: list[Record] = []
        with contextlib.suppress(FileNotFoundError), open_binary(self.path) as handle, gc_paused():
            handle.seek(offset)
            first = None if stop is None else _FIRST_CHUNK
            for lines in line_blocks(handle, state.size - offset, READ_CHUNK, first=first):
                if stop is None:  # to the end: decode in bulk
                    out.extend([r for r in decode_records(lines) if r is not None and r["id"] >= start])
                    continue
                for line in lines:  # a range: decode no further than its end
                    record = decode_record(line)
                    if record is None or record["id"] < start:
                        continue
                    if record["id"] >= stop:
                        return out
                    out.append(record)
        return out

    def columns(self, into: Columns | None = None, wanted: WantedLines | None = None) -> Columns:
        """Every entry, decoded straight into columns (``into`` when given), for DataFrames; with ``wanted``,
        only the lines it picks are decoded (see ``wanted``).

        No index is needed to read a whole file: every complete line is read, and an unfinished last
        line is left out as the index leaves it. Ids that repeat or go back are read as they are, for a frame to
        show them; the entry reads refuse such a file.
        """
        out = Columns() if into is None else into
        with contextlib.suppress(FileNotFoundError), open_binary(self.path) as handle, gc_paused():
            for lines in line_blocks(handle, os.fstat(handle.fileno()).st_size, READ_CHUNK):
                decode_columns(lines if wanted is None else wanted.pick(lines), into=out)
        return out

    def read(self, start: int = 1, stop: int | None = None) -> list[TapeEntry]:
        records = self.records(start, stop)
        with gc_paused():
            return [TapeEntry.of_record(record) for record in records]

    @staticmethod
    def _seek_offset(state: IndexState, start: int) -> int:
        offset = 0
        for ids, offsets in ((state.anchor_ids, state.anchor_offsets), (state.mark_ids, state.mark_offsets)):
            position = bisect.bisect_right(ids, start) - 1
            if position >= 0:
                offset = max(offset, offsets[position])
        return offset

    def _blocks_newest_first(self, size: int, since: int = 1) -> Iterator[bytes]:
        """The file's bytes in blocks of about ``size``, newest first, cut at line ends, back to the entry ``since``."""
        state = self.checked_state()
        end, floor = state.size, self._seek_offset(state, since) if since > 1 else 0
        with contextlib.suppress(FileNotFoundError), open_binary(self.path) as handle:
            carry = b""
            while end > floor:
                begin = max(floor, end - size)
                data = os.pread(handle.fileno(), end - begin, begin) + carry
                end = begin
                if begin > floor:  # the first line may have started in the block before
                    cut = data.find(b"\n") + 1
                    if not cut:
                        carry = data
                        continue
                    carry, data = data[: cut - 1], data[cut:]
                yield data

    def iter_reverse(self) -> Iterator[TapeEntry]:
        for data in self._blocks_newest_first(_REVERSE_BLOCK):
            for line in reversed(data.split(b"\n")):
                record = decode_record(line) if line else None
                if record is not None:
                    yield TapeEntry.of_record(record)

    def iter_reverse_matching(self, words: list[bytes], since: int = 1) -> Iterator[TapeEntry]:
        """Entries newest first down to the entry ``since`` (the file read back to the index's line before it),
        decoding only the lines that hold every one of ``words`` (see ``search``)."""
        for data in self._blocks_newest_first(_SEARCH_BLOCK, since):
            for start, stop in reversed(candidate_lines(data, words)):
                record = decode_record(data[start:stop])
                if record is not None and record["id"] >= since:
                    yield TapeEntry.of_record(record)

    def anchors(self) -> Sequence[AnchorRef]:
        return self.state().anchor_refs()

    def stats(self) -> StoreStats:
        with self._mutex:
            state = self.state()
            torn, size = self._file_size - state.size, self._file_size
            return StoreStats(state.entries, state.last_id, state.bad_lines, torn, size, location=str(self.path))
