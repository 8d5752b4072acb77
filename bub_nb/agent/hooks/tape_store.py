"""What ``provide_tape_store`` may answer: a bub_nb ``TapeStore``, or a store written for Bub, adapted.

Bub's stores have four methods, ``list_tapes()``, ``reset(tape)``, ``fetch_all(query)`` and
``append(tape, entry)``, where the query names the tape and the entry is one record with the
fields of a bub_nb entry (``id, kind, payload, meta, date``). :class:`BubStoreAdapter` puts the
rest of a bub_nb store on top of those four, for Bub's ``AsyncTapeStore`` too (the same four as
coroutines, each awaited on the project's event loop, ``bub_nb.agent.eventloop.run_sync``): it reads
the whole tape for every question, so it suits the small stores plugins write, not tapes of
hundreds of thousands of entries.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from bub_nb.agent.eventloop import run_sync
from bub_nb.errors import PipelineError, TapeError
from bub_nb.tape import AnchorRef, StoreStats, TapeEntry, TapeStore

#: The methods a bub_nb store has and a Bub store lacks; one of them tells the two apart.
BUB_NB_METHODS = ("exists", "read", "iter_reverse", "anchors", "stats")
#: Bub's store protocol.
BUB_METHODS = ("list_tapes", "reset", "fetch_all", "append")


@dataclass(frozen=True)
class BubQuery:
    """The query Bub's ``fetch_all`` reads, asking for every entry of one tape.

    The underscored fields are the ones Bub's stores read; all are left unset, so no filter applies.
    """

    tape: str
    store: Any
    _query: str | None = None
    _after_anchor: str | None = None
    _after_last: bool = False
    _between_anchors: tuple[str, str] | None = None
    _between_dates: tuple[str, str] | None = None
    _kinds: tuple[str, ...] = ()
    _limit: int | None = None

    def all(self) -> Any:
        return self.store.fetch_all(self)


class BubStoreAdapter:
    """A Bub store seen as a bub_nb :class:`~bub_nb.tape.TapeStore`.

    The Bub store assigns ids; an append reads them back. A reset keeps no archive: Bub's ``reset``
    has none, so ``reset(archive=True)`` is refused before anything is dropped.
    """

    def __init__(self, store: Any) -> None:
        self.store = store
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"BubStoreAdapter({self.store!r})"

    def _entries(self, tape: str) -> list[TapeEntry]:
        records = _done(self.store.fetch_all(BubQuery(tape, self.store))) or ()
        return [_entry(record) for record in records]

    def list_tapes(self) -> list[str]:
        return sorted(_done(self.store.list_tapes()))

    def exists(self, tape: str) -> bool:
        return tape in _done(self.store.list_tapes())

    def append(self, tape: str, entries: Sequence[TapeEntry]) -> list[TapeEntry]:
        with self._lock:
            for entry in entries:
                _done(
                    self.store.append(tape, TapeEntry(0, entry.kind, dict(entry.payload), dict(entry.meta), entry.date))
                )
            return self._entries(tape)[-len(entries) :] if entries else []

    def read(self, tape: str, start: int = 1, stop: int | None = None) -> list[TapeEntry]:
        return [e for e in self._entries(tape) if e.id >= start and (stop is None or e.id < stop)]

    def iter_reverse(self, tape: str) -> Iterator[TapeEntry]:
        return reversed(self._entries(tape))

    def anchors(self, tape: str) -> Sequence[AnchorRef]:
        return tuple(AnchorRef(e.id, str(e.payload.get("name", ""))) for e in self._entries(tape) if e.kind == "anchor")

    def stats(self, tape: str) -> StoreStats:
        entries = self._entries(tape)
        return StoreStats(
            len(entries), entries[-1].id if entries else 0, location=f"{type(self.store).__name__}:{tape}"
        )

    def reset(self, tape: str, *, archive: bool = False) -> str | None:
        if archive:
            raise TapeError(
                f"{type(self.store).__name__} is a Bub store, which keeps no archive; reset {tape!r} with archive=False"
            )
        _done(self.store.reset(tape))
        return None


def _done(value: Any) -> Any:
    """What a Bub store's method answered, awaited on the project's event loop when it is a coroutine (Bub's
    ``AsyncTapeStore``): the tape layer above reads synchronously."""
    if not inspect.isawaitable(value):
        return value

    async def awaited() -> Any:
        return await value

    return run_sync(awaited())


def _entry(record: Any) -> TapeEntry:
    if isinstance(record, TapeEntry):
        return record
    return TapeEntry(int(record.id), str(record.kind), dict(record.payload), dict(record.meta or {}), str(record.date))


def as_tape_store(answer: Any) -> TapeStore | None:
    """``provide_tape_store``'s answer as a bub_nb store; a store of neither kind is refused in one line."""
    if answer is None or all(callable(getattr(answer, name, None)) for name in BUB_NB_METHODS):
        return answer  # type: ignore[no-any-return]
    if all(callable(getattr(answer, name, None)) for name in BUB_METHODS):
        return BubStoreAdapter(answer)  # Bub's TapeStore or AsyncTapeStore: coroutines are awaited in turn
    raise PipelineError(
        f"provide_tape_store answered {type(answer).__name__}, which is neither a bub_nb TapeStore "
        f"({', '.join(BUB_NB_METHODS)}, ...) nor a Bub store ({', '.join(BUB_METHODS)})"
    )
