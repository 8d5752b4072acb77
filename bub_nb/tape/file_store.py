"""Tapes as JSON Lines files, shared safely with Bub and with other processes.

Appends hold a cross-process lock, so two kernels (or a kernel and a Bub-style writer that
appends whole lines) never interleave bytes or reuse ids. The file is never rewritten: a torn
last line from a crash is left where it is and the next append starts on a fresh line;
undecodable lines are skipped and counted, never deleted.
"""

from __future__ import annotations

import bisect
import os
import threading
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

import orjson
from filelock import FileLock

from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.index import IndexFile, IndexState
from bub_nb.tape.store import AnchorRef, StoreStats

SESSION_GRAPH = "session_graph.jsonl"
_READ_CHUNK = 1 << 22
_REVERSE_BLOCK = 1 << 18
_PERSIST_EVERY_BYTES = 1 << 20


def _decode(line: bytes) -> dict | None:
    """The decoded line when it has the shape of a tape entry, else ``None``."""
    try:
        data = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if (
        isinstance(data, dict)
        and type(data.get("id")) is int
        and isinstance(data.get("kind"), str)
        and isinstance(data.get("payload"), dict)
    ):
        return data
    return None


class TapeFile:
    """One tape file with its in-memory index, kept current with every other writer."""

    def __init__(self, path: Path, *, fsync: bool = False) -> None:
        self.path = path
        self.fsync = fsync
        self._index_file = IndexFile(path.with_name(path.name + ".idx"))
        self._lock = FileLock(str(path) + ".lock", mode=0o600)
        self._mutex = threading.RLock()
        self._state: IndexState | None = None
        self._persisted_size = 0
        self._file_size = 0

    # -- keeping the index current ---------------------------------------------------------------

    def state(self) -> IndexState:
        """The index, brought up to date with whatever was appended since the last look."""
        with self._mutex:
            try:
                stat = os.stat(self.path)
            except FileNotFoundError:
                self._state, self._file_size = IndexState(), 0
                return self._state
            state = self._state
            if state is None or (stat.st_ino, stat.st_dev) != (state.ino, state.dev) or stat.st_size < state.size:
                state = self._index_file.load(self.path, stat) if state is None else None
                fresh = state is None
                self._state = state = state or IndexState(stat.st_ino, stat.st_dev)
                self._persisted_size = 0 if fresh else state.size
            self._file_size = stat.st_size
            if stat.st_size > state.size:
                self._scan(state, stat.st_size)
                self._maybe_persist(state)
            return state

    def _scan(self, state: IndexState, end: int) -> None:
        """Index the complete lines between ``state.size`` and ``end``."""
        with open(self.path, "rb") as handle:
            handle.seek(state.size)
            position = state.size
            carry = b""
            while position + len(carry) < end:
                chunk = handle.read(min(_READ_CHUNK, end - position - len(carry)))
                if not chunk:
                    break
                data = carry + chunk
                cut = data.rfind(b"\n") + 1
                carry = data[cut:]
                position = self._index_lines(state, data[:cut], position)
        state.size = position

    @staticmethod
    def _index_lines(state: IndexState, data: bytes, position: int) -> int:
        for line in data.split(b"\n")[:-1]:
            offset = position
            position += len(line) + 1
            if not line.strip():
                continue
            record = _decode(line)
            if record is None:
                state.bad_lines += 1
                continue
            entry_id = record["id"]
            state.entries += 1
            state.last_id = max(state.last_id, entry_id)
            if record["kind"] == "anchor":
                name = record["payload"].get("name")
                state.add_anchor(entry_id, offset, name if isinstance(name, str) else "")
            if state.needs_mark(entry_id):
                state.add_mark(entry_id, offset)
        return position

    def _maybe_persist(self, state: IndexState, *, force: bool = False) -> None:
        if not force and state.size - self._persisted_size < _PERSIST_EVERY_BYTES and not self._new_anchors(state):
            return
        try:
            self._lock.acquire(timeout=1)
        except TimeoutError:
            return  # another writer is busy; the next look persists instead
        try:
            if self._persisted_size == 0:
                self._index_file.rewrite(state)
            else:
                self._index_file.append(state, self._persisted_size)
            self._persisted_size = state.size
        finally:
            self._lock.release()

    def _new_anchors(self, state: IndexState) -> bool:
        return bool(state.anchor_offsets) and state.anchor_offsets[-1] >= self._persisted_size

    # -- writing ----------------------------------------------------------------------------------

    def append(self, entries: Sequence[TapeEntry]) -> list[TapeEntry]:
        if not entries:
            return []
        with self._mutex, self._lock:
            state = self.state()
            torn = self._file_size - state.size
            position = self._file_size + 1 if torn else state.size
            chunks = [b"\n"] if torn else []
            if torn:
                # The torn line, now terminated, stays in the file as it is. If the crash came just
                # before its line break it is a whole entry, and its id must not be given out again.
                with open(self.path, "rb") as handle:
                    handle.seek(state.size)
                    self._index_lines(state, handle.read(torn) + b"\n", state.size)
            stored = []
            for number, entry in enumerate(entries, start=state.last_id + 1):
                entry = entry.with_id(number)
                line = entry.to_line()
                if entry.kind == "anchor":
                    state.add_anchor(number, position, entry.payload.get("name", ""))
                if state.needs_mark(number):
                    state.add_mark(number, position)
                chunks.append(line)
                stored.append(entry)
                position += len(line)
            self._write(b"".join(chunks))
            state.size = self._file_size = position
            state.last_id = stored[-1].id
            state.entries += len(stored)
            self._maybe_persist(state)
            return stored

    def _write(self, data: bytes) -> None:
        created = not self.path.exists()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            if created:
                os.fchmod(fd, 0o600)
                stat = os.fstat(fd)
                assert self._state is not None
                self._state.ino, self._state.dev = stat.st_ino, stat.st_dev
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if self.fsync:
                os.fsync(fd)
        finally:
            os.close(fd)

    def reset(self, *, archive: bool) -> str | None:
        with self._mutex, self._lock:
            target = None
            if self.path.exists():
                if archive:
                    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
                    target = self.path.with_name(f"{self.path.name}.{stamp}.bak")
                    counter = 1
                    while target.exists():
                        target = self.path.with_name(f"{self.path.name}.{stamp}-{counter}.bak")
                        counter += 1
                    os.replace(self.path, target)
                else:
                    self.path.unlink()
            self._index_file.remove()
            self._state, self._persisted_size, self._file_size = None, 0, 0
            return str(target) if target else None

    # -- reading ----------------------------------------------------------------------------------

    def read(self, start: int = 1, stop: int | None = None) -> list[TapeEntry]:
        state = self.state()
        if state.size == 0 or (stop is not None and stop <= start) or start > state.last_id:
            return []
        offset = self._seek_offset(state, start)
        out: list[TapeEntry] = []
        with open(self.path, "rb") as handle:
            handle.seek(offset)
            remaining = state.size - offset
            carry = b""
            while remaining > 0:
                chunk = handle.read(min(remaining, _READ_CHUNK if stop is None else 1 << 16))
                if not chunk:
                    break
                remaining -= len(chunk)
                data = carry + chunk
                cut = data.rfind(b"\n") + 1
                carry = data[cut:]
                for line in data[:cut].split(b"\n")[:-1]:
                    record = _decode(line) if line.strip() else None
                    if record is None or record["id"] < start:
                        continue
                    if stop is not None and record["id"] >= stop:
                        return out
                    out.append(TapeEntry.from_dict(record))  # type: ignore[arg-type]
        return out

    @staticmethod
    def _seek_offset(state: IndexState, start: int) -> int:
        offset = 0
        for ids, offsets in ((state.anchor_ids, state.anchor_offsets), (state.mark_ids, state.mark_offsets)):
            position = bisect.bisect_right(ids, start) - 1
            if position >= 0:
                offset = max(offset, offsets[position])
        return offset

    def iter_reverse(self) -> Iterator[TapeEntry]:
        end = self.state().size
        with open(self.path, "rb") if end else _empty() as handle:
            carry = b""
            while end > 0:
                begin = max(0, end - _REVERSE_BLOCK)
                handle.seek(begin)
                lines = (handle.read(end - begin) + carry).split(b"\n")
                carry = lines.pop(0) if begin > 0 else b""
                for line in reversed(lines):
                    record = _decode(line) if line.strip() else None
                    if record is not None:
                        yield TapeEntry.from_dict(record)  # type: ignore[misc]
                end = begin

    def anchors(self) -> list[AnchorRef]:
        state = self.state()
        return [AnchorRef(i, n) for i, n in zip(state.anchor_ids, state.anchor_names, strict=True)]

    def stats(self) -> StoreStats:
        state = self.state()
        return StoreStats(
            entries=state.entries,
            last_id=state.last_id,
            bad_lines=state.bad_lines,
            torn_tail_bytes=self._file_size - state.size,
            size_bytes=self._file_size,
            location=str(self.path),
        )


class _empty:
    """A stand-in file handle for a tape that does not exist yet."""

    def __enter__(self) -> _empty:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class FileTapeStore:
    """Tapes stored as ``<name>.jsonl`` under one folder, as Bub stores them."""

    def __init__(self, directory: Path | str, *, fsync: bool = False) -> None:
        self.directory = Path(directory).expanduser()
        self.fsync = fsync
        self._files: dict[str, TapeFile] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"FileTapeStore({str(self.directory)!r})"

    def path_for(self, tape: str) -> Path:
        return self.directory / f"{tape}.jsonl"

    def _file(self, tape: str) -> TapeFile:
        with self._lock:
            file = self._files.get(tape)
            if file is None:
                self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
                file = self._files[tape] = TapeFile(self.path_for(tape), fsync=self.fsync)
            return file

    def list_tapes(self) -> list[str]:
        if not self.directory.is_dir():
            return []
        return sorted(p.name[: -len(".jsonl")] for p in self.directory.glob("*.jsonl") if p.name != SESSION_GRAPH)

    def exists(self, tape: str) -> bool:
        return self.path_for(tape).exists()

    def append(self, tape: str, entries: Sequence[TapeEntry]) -> list[TapeEntry]:
        return self._file(tape).append(entries)

    def read(self, tape: str, start: int = 1, stop: int | None = None) -> list[TapeEntry]:
        return self._file(tape).read(start, stop)

    def iter_reverse(self, tape: str) -> Iterator[TapeEntry]:
        return self._file(tape).iter_reverse()

    def anchors(self, tape: str) -> Sequence[AnchorRef]:
        return self._file(tape).anchors()

    def stats(self, tape: str) -> StoreStats:
        return self._file(tape).stats()

    def reset(self, tape: str, *, archive: bool = False) -> str | None:
        return self._file(tape).reset(archive=archive)
