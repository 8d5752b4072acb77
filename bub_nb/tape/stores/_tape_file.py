"""One tape file, appended under a cross-process lock and read through its anchor index.

Each batch is one ``O_APPEND`` write under the lock, so two kernels never interleave bytes or reuse ids. A
Bub-style writer that appends whole lines without the lock cannot interleave bytes with us either, and what it
appended before we lock is read first, so our ids continue after its. No lock orders two writers that both pick
"last id + 1" while only one locks; we never reuse an id, and the index reads the foreign lines. The file is never
rewritten: a torn last line is left and the next append starts on a fresh line; bad lines are skipped, counted.
"""

from __future__ import annotations

import bisect
import contextlib
import os
import threading
import time
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path

from filelock import FileLock, Timeout

from bub_nb.errors import TapeError, TapeOrderWarning
from bub_nb.tape._lines import Record, decode_record, decode_records, gc_paused, line_blocks
from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.stores._index import READ_CHUNK, IndexState
from bub_nb.tape.stores._index_file import IndexFile
from bub_nb.tape.stores._nofollow import open_binary, open_fd
from bub_nb.tape.stores.columns import Columns, decode_columns
from bub_nb.tape.stores.protocol import AnchorRef, StoreStats
from bub_nb.tape.stores.search import candidate_lines
from bub_nb.tape.stores.wanted import WantedLines

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
