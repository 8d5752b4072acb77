"""Tapes as JSON Lines files in one folder, shared safely with Bub and with other processes (see ``_tape_file``)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock

from bub_nb.errors import TapeError
from bub_nb.tape._lines import Record
from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.names import LINEAGE_FILE as SESSION_GRAPH
from bub_nb.tape.names import check_file_name
from bub_nb.tape.stores._tape_file import TapeFile
from bub_nb.tape.stores.archive import next_archive_path
from bub_nb.tape.stores.columns import Columns
from bub_nb.tape.stores.protocol import AnchorRef, StoreStats
from bub_nb.tape.stores.wanted import WantedLines


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
        """Where ``tape`` lives; a name that would leave the folder raises ``TapeNameError``."""
        return self.directory / f"{check_file_name(tape)}.jsonl"

    def _file(self, tape: str) -> TapeFile:
        with self._lock:
            file = self._files.get(tape)
            if file is None:
                try:
                    self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
                except OSError as error:
                    raise TapeError(f"Tape folder {str(self.directory)!r} cannot be used: {error.strerror}") from None
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

    def records(self, tape: str, start: int = 1, stop: int | None = None) -> list[Record]:
        """Like ``read`` but as the decoded dicts, for bulk consumers such as DataFrames."""
        return self._file(tape).records(start, stop)

    def columns(self, tape: str, into: Columns | None = None, wanted: WantedLines | None = None) -> Columns:
        """Every entry of ``tape`` as columns (added to ``into`` when given), the fastest way to a DataFrame;
        with ``wanted``, only the lines it picks are decoded (a superset of those it asks for)."""
        return self._file(tape).columns(into, wanted)

    def iter_reverse(self, tape: str) -> Iterator[TapeEntry]:
        return self._file(tape).iter_reverse()

    def iter_reverse_matching(self, tape: str, words: list[bytes], since: int = 1) -> Iterator[TapeEntry]:
        return self._file(tape).iter_reverse_matching(words, since)

    def anchors(self, tape: str) -> Sequence[AnchorRef]:
        return self._file(tape).anchors()

    def stats(self, tape: str) -> StoreStats:
        return self._file(tape).stats()

    @contextmanager
    def notebook_lock(self, tape: str) -> Iterator[None]:
        """The lock every process takes to change who holds the notebook whose tape is ``tape``: a file beside it,
        ``<name>.jsonl.team.lock`` (no tape can be named so), never the append lock of any one tape."""
        path = str(self.path_for(tape)) + ".team.lock"
        self._file(tape)  # makes the folder
        with FileLock(path, mode=0o600):
            yield

    def reset(self, tape: str, *, archive: bool = False) -> str | None:
        path = self.path_for(tape)
        return self._file(tape).reset(archive_to=next_archive_path(path) if archive else None)
