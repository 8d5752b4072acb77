"""The ``TapeStore`` protocol, the capabilities some stores add to it, and the in-memory store."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, overload, runtime_checkable

from bub_nb.tape._lines import Record
from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.stores.columns import Columns


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


@runtime_checkable
class FileBacked(Protocol):
    """A store that keeps each tape in a file of one folder."""

    directory: Path

    def path_for(self, tape: str) -> Path: ...


@runtime_checkable
class KeepsLineage(Protocol):
    """A store that records forks itself (a database), instead of in a folder's lineage file."""

    def record_lineage(self, record: dict[str, Any]) -> None: ...

    def lineage(self) -> list[dict[str, Any]]: ...


@runtime_checkable
class ReadsRecords(Protocol):
    """A store that can hand over decoded lines without building entries."""

    def records(self, tape: str, start: int = 1, stop: int | None = None) -> list[Record]: ...


@runtime_checkable
class ReadsColumns(Protocol):
    """A store that can decode a whole tape straight into columns."""

    def columns(self, tape: str, into: Columns | None = None) -> Columns:
        """The tape's entries as columns: added to ``into`` when given (the columns of several tapes)."""
        ...


@runtime_checkable
class SearchesLines(Protocol):
    """A store that can skip lines holding none of some words before decoding them (from the newest entry back to
    the entry ``since``)."""

    def iter_reverse_matching(self, tape: str, words: list[bytes], since: int = 1) -> Iterator[TapeEntry]: ...


@runtime_checkable
class MayBeReadOnly(Protocol):
    """A store some of whose tapes take no appends (an archive a reset left)."""

    def writable(self, tape: str) -> bool: ...


class Follower(Protocol):
    """New entries of one tape as they are committed: ``poll`` waits up to ``timeout`` seconds for them."""

    def poll(self, timeout: float = 1.0) -> list[TapeEntry]: ...

    def close(self) -> None: ...


@runtime_checkable
class WakesReaders(Protocol):
    """A store that can wake a reader when a tape grows (PostgreSQL's ``LISTEN``/``NOTIFY``)."""

    def follow(self, tape: str, after: int | None = None) -> Follower: ...


@runtime_checkable
class KnowsOwners(Protocol):
    """A store that knows each tape's owner and notebook (a database)."""

    def tape_details(self) -> dict[str, dict[str, Any]]: ...

    def owner_and_name(self, tape: str) -> tuple[str, str]:
        """``(owner, name)``: ``owner/name`` names another role's tape, a plain name one's own."""
        ...

    def note_notebook(self, tape: str, notebook: str) -> None:
        """Remember which notebook writes ``tape``, for the tape's record when it is made."""
        ...

    def overview_rows(self) -> list[dict[str, Any]]:
        """One summary per tape this role reads, counted by the store (``class_overview``'s rows)."""
        ...


@runtime_checkable
class ReadsClassLines(Protocol):
    """A store that picks the lines of every tape a role reads in one go (a database): those of some kinds,
    from a moment on, with what every frame needs beside them; archived tapes too when asked."""

    def class_lines(
        self, kinds: Sequence[str] = (), since: Any = None, *, archives: bool = False
    ) -> list[tuple[str, bool, str | None, list[bytes]]]: ...


@runtime_checkable
class CopiesEntries(Protocol):
    """A store that dates appends itself (a database) and takes whole entries, ids and dates kept, another way."""

    def import_entries(self, tape: str, entries: Sequence[TapeEntry], *, notebook: str | None = None) -> int: ...


@runtime_checkable
class LocksNotebooks(Protocol):
    """A store that can serialise the changes of who holds a notebook's conversation across processes: a lock file
    beside the tapes, or a lock in the database. Appends do not take it; only a check followed by a write that must
    not meet a stale check does (a handoff between agents)."""

    def notebook_lock(self, tape: str) -> AbstractContextManager[None]:
        """Held while one process checks and changes the notebook whose tape is ``tape``."""
        ...
