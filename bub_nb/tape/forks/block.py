"""Forks on a store: writes that go aside until they are merged back in order, or dropped."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import replace

from bub_nb.tape._lines import anchor_name
from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.stores.protocol import AnchorRef, StoreStats, TapeStore


class ForkedStore:
    """A store for one tape that reads through to its parent and keeps its own writes aside.

    Entries written here get provisional ids after the parent's last id; merging appends them to
    the parent in order, which gives them their final ids.
    """

    def __init__(self, parent: TapeStore, tape: str) -> None:
        self.parent = parent
        self.tape = tape
        self.base_id = parent.stats(tape).last_id
        self.entries: list[TapeEntry] = []
        self._lock = threading.Lock()

    def _own(self, tape: str) -> bool:
        return tape == self.tape

    def list_tapes(self) -> list[str]:
        return self.parent.list_tapes()

    def exists(self, tape: str) -> bool:
        return self.parent.exists(tape) or (self._own(tape) and bool(self.entries))

    def append(self, tape: str, entries: Sequence[TapeEntry]) -> list[TapeEntry]:
        if not self._own(tape):
            return self.parent.append(tape, entries)
        with self._lock:
            first = self.base_id + len(self.entries) + 1
            stored = [entry.with_id(first + i) for i, entry in enumerate(entries)]
            self.entries.extend(stored)
            return stored

    def read(self, tape: str, start: int = 1, stop: int | None = None) -> list[TapeEntry]:
        if not self._own(tape):
            return self.parent.read(tape, start, stop)
        parent_stop = self.base_id + 1 if stop is None else min(stop, self.base_id + 1)
        head = self.parent.read(tape, start, parent_stop) if start < parent_stop else []
        return head + [e for e in self.entries if e.id >= start and (stop is None or e.id < stop)]

    def iter_reverse(self, tape: str) -> Iterator[TapeEntry]:
        if not self._own(tape):
            yield from self.parent.iter_reverse(tape)
            return
        yield from reversed(list(self.entries))
        for entry in self.parent.iter_reverse(tape):
            if entry.id <= self.base_id:
                yield entry

    def anchors(self, tape: str) -> Sequence[AnchorRef]:
        if not self._own(tape):
            return self.parent.anchors(tape)
        base = [a for a in self.parent.anchors(tape) if a.id <= self.base_id]
        return [*base, *(AnchorRef(e.id, anchor_name(e.payload)) for e in self.entries if e.kind == "anchor")]

    def stats(self, tape: str) -> StoreStats:
        stats = self.parent.stats(tape)
        if not self._own(tape) or not self.entries:
            return stats
        return replace(stats, entries=stats.entries + len(self.entries), last_id=self.entries[-1].id)

    def reset(self, tape: str, *, archive: bool = False) -> str | None:
        return self.parent.reset(tape, archive=archive)

    def merge(self) -> list[TapeEntry]:
        """Append the forked entries to the parent, in order; returns them with their final ids."""
        with self._lock:
            pending, self.entries = self.entries, []
        return self.parent.append(self.tape, [e.with_id(0) for e in pending]) if pending else []


class ForkBlock:
    """``tape.fork()``: a sync and an async context manager that sends the tape's writes aside.

    Forks are kept per context (a ``ContextVar``), so a fork in one asyncio task does not catch the
    writes of another.
    """

    def __init__(
        self, forks: ContextVar[tuple[ForkedStore, ...]], store: TapeStore, tape: str, merge_back: bool
    ) -> None:
        self._forks, self._store, self._tape, self._merge_back = forks, store, tape, merge_back

    def __enter__(self) -> ForkedStore:
        self.fork = ForkedStore(self._store, self._tape)
        self._token = self._forks.set((*self._forks.get(), self.fork))
        return self.fork

    def __exit__(self, *exc: object) -> None:
        self._forks.reset(self._token)
        if self._merge_back:
            self.fork.merge()

    async def __aenter__(self) -> ForkedStore:
        return self.__enter__()

    async def __aexit__(self, *exc: object) -> None:
        self.__exit__(*exc)
