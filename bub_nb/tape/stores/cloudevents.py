"""A tape file in Bub's next format (CloudEvents 1.0 lines, ``bub_nb.tape.cloudevents``), opened read-only.

The file is read again whenever it changed since the last look (its size and modification time), so a tape Bub is
still writing shows its new steps; nothing is ever written to it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

from bub_nb.errors import TapeError
from bub_nb.tape.cloudevents import CloudEventsRead, is_cloudevent_line, read_cloudevents
from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.stores.memory import MemoryTapeStore
from bub_nb.tape.stores.protocol import AnchorRef, StoreStats


def is_cloudevents_file(path: Path) -> bool:
    """Whether ``path`` is a tape in Bub's next format: its first line that is not blank is a structured CloudEvent."""
    try:
        with path.open("rb") as handle:
            for line in handle:
                if line.strip():
                    return is_cloudevent_line(line)
    except OSError:
        return False
    return False


class CloudEventsTapeStore:
    """One CloudEvents tape file, as the tape ``name``; appends and resets are refused in one line."""

    def __init__(self, path: Path, name: str) -> None:
        self.file = path
        self.name = name
        self._seen: tuple[int, int] | None = None
        self._memory = MemoryTapeStore()
        self.skipped: list[int] = []
        """Lines (1-based) that were no structured CloudEvent, left out."""
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"CloudEventsTapeStore({str(self.file)!r})"

    def _fresh(self) -> MemoryTapeStore:
        with self._lock:
            status = self.file.stat()
            seen = (status.st_size, status.st_mtime_ns)
            if seen != self._seen:
                with self.file.open("rb") as handle:
                    read: CloudEventsRead = read_cloudevents(handle)
                memory = MemoryTapeStore()
                if read.entries:
                    memory.append(self.name, read.entries)
                self._memory, self.skipped, self._seen = memory, read.skipped, seen
            return self._memory

    def list_tapes(self) -> list[str]:
        return [self.name]

    def exists(self, tape: str) -> bool:
        return tape == self.name and self._fresh().exists(tape)

    def writable(self, tape: str) -> bool:
        return tape != self.name

    def append(self, tape: str, entries: Sequence[TapeEntry]) -> list[TapeEntry]:
        raise self._refuse(tape, "appended to")

    def reset(self, tape: str, *, archive: bool = False) -> str | None:
        raise self._refuse(tape, "reset")

    def read(self, tape: str, start: int = 1, stop: int | None = None) -> list[TapeEntry]:
        return self._fresh().read(tape, start, stop)

    def iter_reverse(self, tape: str) -> Iterator[TapeEntry]:
        return self._fresh().iter_reverse(tape)

    def anchors(self, tape: str) -> Sequence[AnchorRef]:
        return self._fresh().anchors(tape)

    def stats(self, tape: str) -> StoreStats:
        stats = self._fresh().stats(tape)
        return StoreStats(stats.entries, stats.last_id, bad_lines=len(self.skipped), location=str(self.file))

    def _refuse(self, tape: str, action: str) -> TapeError:
        return TapeError(
            f"Tape {tape!r} is in Bub's CloudEvents format and opens read-only; it cannot be {action} "
            f"({str(self.file)!r})"
        )
