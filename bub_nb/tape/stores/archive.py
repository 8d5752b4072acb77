"""Archives: the ``<name>.jsonl.<stamp>.bak`` files a reset leaves beside a tape, opened read-only."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from bub_nb.errors import TapeError
from bub_nb.tape._lines import Record
from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.stores._tape_file import TapeFile
from bub_nb.tape.stores.columns import Columns
from bub_nb.tape.stores.protocol import AnchorRef, FileBacked, ReadsColumns, ReadsRecords, StoreStats, TapeStore

_ARCHIVE = re.compile(r"^(?P<tape>.+)\.jsonl\.(?P<stamp>\d{8}T\d{6}Z)(?:-(?P<counter>\d+))?\.bak$")
_STAMP = "%Y%m%dT%H%M%SZ"


def next_archive_path(path: Path) -> Path:
    """Where a reset moves ``<name>.jsonl`` now: ``<name>.jsonl.<UTC stamp>.bak``, as Bub names it, with ``-1``,
    ``-2``... after the stamp when a second reset falls in the same second."""
    stamp = datetime.now(UTC).strftime(_STAMP)
    target = path.with_name(f"{path.name}.{stamp}.bak")
    counter = 1
    while target.exists():
        target = path.with_name(f"{path.name}.{stamp}-{counter}.bak")
        counter += 1
    return target


def _archive_order(path: Path) -> tuple[str, str, int]:
    """Oldest first for each tape: by stamp, then by the counter a second reset in the same second adds."""
    match = _ARCHIVE.match(path.name)
    assert match is not None
    return match["tape"], match["stamp"], int(match["counter"] or 0)


def is_archive_name(name: str | Path) -> bool:
    """Whether a file name is one a reset gives an archive (``<name>.jsonl.<YYYYmmddTHHMMSSZ>.bak``)."""
    return _ARCHIVE.match(Path(name).name) is not None


def archive_tape(name: str | Path) -> str | None:
    """The tape an archive belongs to (``notes.jsonl.20260101T000000Z.bak`` gives ``notes``); ``None`` for a
    name that is no archive's."""
    found = _ARCHIVE.match(Path(name).name)
    return None if found is None else found["tape"]


def archive_stem(name: str | Path) -> str | None:
    """An archive's tape name and stamp as one plain name (``notes.jsonl.20260101T000000Z-1.bak`` gives
    ``notes-20260101T000000Z-1``), for names derived from it; ``None`` for a name that is no archive's."""
    found = _ARCHIVE.match(Path(name).name)
    if found is None:
        return None
    counter = f"-{found['counter']}" if found["counter"] else ""
    return f"{found['tape']}-{found['stamp']}{counter}"


def archive_files(directory: Path) -> list[Path]:
    """The archives in a tapes folder, by tape, each tape's oldest first."""
    if not directory.is_dir():
        return []
    return sorted((path for path in directory.glob("*.jsonl.*.bak") if is_archive_name(path.name)), key=_archive_order)


class _Folder(TapeStore, FileBacked, ReadsRecords, ReadsColumns, Protocol):
    """The live tapes' store an archive sits among (a ``FileTapeStore``)."""


class ArchiveTapeStore:
    """One archive as a read-only tape named after its file; other names go to the folder's store,
    so a fork of the archive or an address into a live tape still works."""

    def __init__(self, path: Path, folder: _Folder) -> None:
        self.archive = path
        self.name = path.name
        self.folder = folder
        self.directory = folder.directory
        self._file = TapeFile(path, keep_index=False)

    def __repr__(self) -> str:
        return f"ArchiveTapeStore({str(self.archive)!r})"

    def _own(self, tape: str) -> bool:
        return tape == self.name

    def writable(self, tape: str) -> bool:
        """Whether ``tape`` takes appends: every tape but the archive itself."""
        return not self._own(tape)

    def _refuse(self, tape: str, action: str) -> TapeError:
        return TapeError(
            f"Tape {tape!r} is an archive and opens read-only; it cannot be {action} ({str(self.archive)!r}). "
            "Fork it, or open the live tape, to write"
        )

    def path_for(self, tape: str) -> Path:
        return self.archive if self._own(tape) else self.folder.path_for(tape)

    def list_tapes(self) -> list[str]:
        return self.folder.list_tapes()

    def exists(self, tape: str) -> bool:
        return self.archive.exists() if self._own(tape) else self.folder.exists(tape)

    def append(self, tape: str, entries: Sequence[TapeEntry]) -> list[TapeEntry]:
        if self._own(tape):
            raise self._refuse(tape, "appended to")
        return self.folder.append(tape, entries)

    def read(self, tape: str, start: int = 1, stop: int | None = None) -> list[TapeEntry]:
        return self._file.read(start, stop) if self._own(tape) else self.folder.read(tape, start, stop)

    def records(self, tape: str, start: int = 1, stop: int | None = None) -> list[Record]:
        return self._file.records(start, stop) if self._own(tape) else self.folder.records(tape, start, stop)

    def columns(self, tape: str, into: Columns | None = None) -> Columns:
        """The archive's entries (or another tape's) as columns, as a frame reads them."""
        return self._file.columns(into) if self._own(tape) else self.folder.columns(tape, into)

    def iter_reverse(self, tape: str) -> Iterator[TapeEntry]:
        return self._file.iter_reverse() if self._own(tape) else self.folder.iter_reverse(tape)

    def anchors(self, tape: str) -> Sequence[AnchorRef]:
        return self._file.anchors() if self._own(tape) else self.folder.anchors(tape)

    def stats(self, tape: str) -> StoreStats:
        return self._file.stats() if self._own(tape) else self.folder.stats(tape)

    def reset(self, tape: str, *, archive: bool = False) -> str | None:
        if self._own(tape):
            raise self._refuse(tape, "reset")
        return self.folder.reset(tape, archive=archive)
