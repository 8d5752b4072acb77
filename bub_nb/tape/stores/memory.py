"""The in-memory store: a tape per list, for tests, lessons and forks that go aside."""

from __future__ import annotations

import bisect
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from bub_nb.tape._lines import anchor_name
from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.stores.protocol import AnchorRef, StoreStats


class MemoryTapeStore:
    """Tapes held in this process only: for tests, lessons and forks."""

    def __init__(self) -> None:
        self._tapes: dict[str, list[TapeEntry]] = {}
        self._anchors: dict[str, list[AnchorRef]] = {}
        self._archives: dict[str, list[list[TapeEntry]]] = {}
        self._lock = threading.RLock()
        self._notebook_locks: dict[str, threading.RLock] = {}

    def list_tapes(self) -> list[str]:
        return sorted(name for name, entries in self._tapes.items() if entries)

    def exists(self, tape: str) -> bool:
        return bool(self._tapes.get(tape))

    def append(self, tape: str, entries: Sequence[TapeEntry]) -> list[TapeEntry]:
        with self._lock:
            stored_entries = self._tapes.setdefault(tape, [])
            anchors = self._anchors.setdefault(tape, [])
            next_id = stored_entries[-1].id + 1 if stored_entries else 1
            stored = [entry.with_id(next_id + offset) for offset, entry in enumerate(entries)]
            stored_entries.extend(stored)
            anchors.extend(AnchorRef(e.id, anchor_name(e.payload)) for e in stored if e.kind == "anchor")
            return stored

    def read(self, tape: str, start: int = 1, stop: int | None = None) -> list[TapeEntry]:
        entries = self._tapes.get(tape, [])
        lo = bisect.bisect_left(entries, start, key=_entry_id)
        hi = len(entries) if stop is None else bisect.bisect_left(entries, stop, key=_entry_id)
        return entries[lo:hi]

    def iter_reverse(self, tape: str) -> Iterator[TapeEntry]:
        return reversed(list(self._tapes.get(tape, [])))

    def anchors(self, tape: str) -> Sequence[AnchorRef]:
        return tuple(self._anchors.get(tape, ()))

    def stats(self, tape: str) -> StoreStats:
        entries = self._tapes.get(tape, [])
        return StoreStats(len(entries), entries[-1].id if entries else 0, location=f"memory://{tape}")

    @contextmanager
    def notebook_lock(self, tape: str) -> Iterator[None]:
        """Held by whoever changes who holds the notebook whose tape is ``tape`` (threads of this process)."""
        with self._lock:
            lock = self._notebook_locks.setdefault(tape, threading.RLock())
        with lock:
            yield

    def reset(self, tape: str, *, archive: bool = False) -> str | None:
        with self._lock:
            old = self._tapes.pop(tape, [])
            self._anchors.pop(tape, None)
            if not archive:
                return None
            archives = self._archives.setdefault(tape, [])
            archives.append(old)
            return f"memory://{tape}#archive-{len(archives)}"


def _entry_id(entry: TapeEntry) -> int:
    return entry.id
