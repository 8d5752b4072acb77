"""The ``TapeStore`` protocol and the in-memory store."""

from __future__ import annotations

import bisect
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol, overload, runtime_checkable

from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.lines import anchor_name


@dataclass(frozen=True, slots=True)
class AnchorRef:
    """Where an anchor sits: its id and name. The state is read on demand."""

    id: int
    name: str


@dataclass(frozen=True, slots=True)
class StoreStats:
    """What a store knows about one tape without reading it."""

    entries: int
    last_id: int
    bad_lines: int = 0
    torn_tail_bytes: int = 0
    size_bytes: int | None = None
    location: str = ""


class AnchorList(Sequence[AnchorRef]):
    """A read-only view of the first ``length`` indexed anchors.

    Refs are made only for the items looked at, so finding the last anchor of a tape with tens of
    thousands of them costs nothing extra.
    """

    __slots__ = ("_ids", "_length", "_names")

    def __init__(self, ids: list[int], names: list[str], length: int) -> None:
        self._ids, self._names, self._length = ids, names, length

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> AnchorRef: ...

    @overload
    def __getitem__(self, index: slice) -> list[AnchorRef]: ...

    def __getitem__(self, index: int | slice) -> AnchorRef | list[AnchorRef]:
        if isinstance(index, slice):
            return [AnchorRef(self._ids[i], self._names[i]) for i in range(*index.indices(self._length))]
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError(f"anchor index {index} out of range for {self._length} anchors")
        return AnchorRef(self._ids[index], self._names[index])

    def __repr__(self) -> str:
        return f"AnchorList({list(self)!r})"


@runtime_checkable
class TapeStore(Protocol):
    """Where tapes live. Stores assign ids (1, 2, 3, … per tape) and never rewrite an entry."""

    def list_tapes(self) -> list[str]: ...

    def exists(self, tape: str) -> bool: ...

    def append(self, tape: str, entries: Sequence[TapeEntry]) -> list[TapeEntry]:
        """Store ``entries`` in order with fresh ids and return them as stored."""
        ...

    def read(self, tape: str, start: int = 1, stop: int | None = None) -> list[TapeEntry]:
        """Entries with ``start <= id < stop``, oldest first."""
        ...

    def iter_reverse(self, tape: str) -> Iterator[TapeEntry]:
        """Every entry, newest first, read lazily."""
        ...

    def anchors(self, tape: str) -> Sequence[AnchorRef]:
        """Every anchor of the tape, oldest first, without reading the entries between them."""
        ...

    def stats(self, tape: str) -> StoreStats: ...

    def reset(self, tape: str, *, archive: bool = False) -> str | None:
        """Start ``tape`` over; with ``archive`` keep the old entries aside and return where."""
        ...


class MemoryTapeStore:
    """Tapes held in this process only: for tests, lessons and forks."""

    def __init__(self) -> None:
        self._tapes: dict[str, list[TapeEntry]] = {}
        self._anchors: dict[str, list[AnchorRef]] = {}
        self._archives: dict[str, list[list[TapeEntry]]] = {}
        self._lock = threading.RLock()

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
        ids = _IdView(entries)
        lo = bisect.bisect_left(ids, start)
        hi = len(entries) if stop is None else bisect.bisect_left(ids, stop)
        return entries[lo:hi]

    def iter_reverse(self, tape: str) -> Iterator[TapeEntry]:
        return reversed(list(self._tapes.get(tape, [])))

    def anchors(self, tape: str) -> Sequence[AnchorRef]:
        return tuple(self._anchors.get(tape, ()))

    def stats(self, tape: str) -> StoreStats:
        entries = self._tapes.get(tape, [])
        return StoreStats(len(entries), entries[-1].id if entries else 0, location=f"memory://{tape}")

    def reset(self, tape: str, *, archive: bool = False) -> str | None:
        with self._lock:
            old = self._tapes.pop(tape, [])
            self._anchors.pop(tape, None)
            if not archive:
                return None
            archives = self._archives.setdefault(tape, [])
            archives.append(old)
            return f"memory://{tape}#archive-{len(archives)}"


class _IdView(Sequence[int]):
    """The ids of an entry list, for bisect, without copying them."""

    def __init__(self, entries: list[TapeEntry]) -> None:
        self._entries = entries

    def __len__(self) -> int:
        return len(self._entries)

    def __getitem__(self, index):  # type: ignore[no-untyped-def, override]
        return self._entries[index].id
