"""Moving tapes between a Bub home's files and a database, in Bub's format, ids and lineage intact.

Both directions copy only what the other side lacks, so running them again is cheap and safe, and a copy
that is behind is brought up to date. A tape whose two copies disagree on an entry they both hold is left
alone and named; every other tape, and the fork lineage, is still copied.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import orjson
from filelock import FileLock

from bub_nb.errors import TapeError
from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.locations import recorded_notebook, tapes_home
from bub_nb.tape.names import LINEAGE_FILE, check_file_name
from bub_nb.tape.stores.lineage import read_lineage
from bub_nb.tape.stores.postgres.store import PostgresTapeStore
from bub_nb.tape.stores.protocol import StoreStats, TapeStore


@dataclass
class Copied:
    """What one push or pull moved: new entries per tape, the tapes left alone and why, and fork records."""

    entries: dict[str, int] = field(default_factory=dict)
    left_alone: dict[str, str] = field(default_factory=dict)
    lineage: int = 0

    @property
    def total(self) -> int:
        return sum(self.entries.values())

    def describe(self, verb: str, where: str) -> str:
        changed = sum(1 for count in self.entries.values() if count)
        text = f"{verb} {self.total} new entries in {changed} of {len(self.entries)} tapes {where}"
        text += f", and {self.lineage} fork records" if self.lineage else ", and no fork records"
        if self.left_alone:
            reasons = "; ".join(f"{name!r} {why}" for name, why in sorted(self.left_alone.items()))
            text += f". Not copied: {reasons}"
        return text


def _same(a: TapeEntry, b: TapeEntry) -> bool:
    return (a.kind, a.payload, a.meta, a.date) == (b.kind, b.payload, b.meta, b.date)


class _Copy(Protocol):
    def stats(self, tape: str) -> StoreStats: ...

    def read(self, tape: str, start: int = 1, stop: int | None = None) -> list[TapeEntry]: ...


def _new_entries(name: str, source: _Copy, target: _Copy, copied: Copied) -> list[TapeEntry]:
    """What ``target`` lacks of ``name``: nothing when it is as far or further, or when the copies disagree
    on the last entry both hold (then the tape is noted as left alone)."""
    source_last, target_last = source.stats(name).last_id, target.stats(name).last_id
    shared = min(source_last, target_last)
    if shared:
        mine, theirs = target.read(name, shared, shared + 1), source.read(name, shared, shared + 1)
        if not mine or not theirs or not _same(mine[0], theirs[0]):
            copied.left_alone[name] = f"differs between the two copies at entry {shared}"
            return []
    return source.read(name, target_last + 1) if source_last > target_last else []


def _lineage_key(record: dict[str, Any]) -> tuple[Any, ...]:
    return (record.get("owner"), record.get("parent"), record.get("child"), record.get("from_id"))


@dataclass(frozen=True)
class _Listed:
    """Entries in hand, read newest first as a tape is."""

    entries: Sequence[TapeEntry]

    def iter_reverse(self, kinds: Sequence[str] = ()) -> Iterator[TapeEntry]:
        return (entry for entry in reversed(self.entries) if not kinds or entry.kind in kinds)


def push(home: str | Path | None, store: PostgresTapeStore) -> Copied:
    """Copy the tapes under ``<home>/tapes`` and their fork lineage into ``store``, as this role's tapes."""
    from bub_nb.tape.stores.resolve import file_store

    files = file_store(tapes_home(home))
    copied = Copied()
    for name in files.list_tapes():
        try:
            new = _new_entries(name, files, store, copied)
            if name not in copied.left_alone:
                # the notebook the tape's own events record, as `bub-nb tapes list` lists it, goes with its row
                notebook = recorded_notebook(_Listed(new))
                copied.entries[name] = store.import_entries(name, new, notebook=notebook) if new else 0
        except TapeError as error:
            copied.left_alone[name] = f"was refused: {error}"
    known = {_lineage_key(r) for r in store.lineage()}
    for record in read_lineage(files.directory):
        if (
            {"parent", "child", "from_id"} <= record.keys()
            and "owner" not in record
            and _lineage_key(record) not in known
        ):
            store.record_lineage({**record, "date": str(record.get("date", ""))})
            copied.lineage += 1
    return copied


def pull(store: PostgresTapeStore, home: str | Path | None) -> Copied:
    """Copy every tape this role may read from ``store`` into ``<home>/tapes`` as Bub's files; another
    role's tape ``owner/name`` (a teacher's class) goes to ``<home>/tapes/<owner>/<name>.jsonl``."""
    from bub_nb.tape.stores.resolve import file_store

    top = file_store(tapes_home(home))
    top.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    copied = Copied()
    for name in store.list_tapes():
        owner, plain = store.owner_and_name(name)
        try:
            folder = top if owner == store.role else file_store(top.directory / check_file_name(owner))
            folder.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            new = _new_entries(name, store, _Renamed(folder, name, plain), copied)
            if name not in copied.left_alone:
                copied.entries[name] = _append_lines(folder.path_for(plain), new) if new else 0
        except TapeError as error:
            copied.left_alone[name] = f"was refused: {error}"
    known = {_lineage_key(r) for r in read_lineage(top.directory)}
    lines = [orjson.dumps(r) + b"\n" for r in store.lineage() if _lineage_key(r) not in known]
    if lines:
        _append_bytes(top.directory / LINEAGE_FILE, b"".join(lines))
        copied.lineage = len(lines)
    return copied


class _Renamed:
    """A folder's tape ``plain`` read under the name the database gives it (``owner/name``)."""

    def __init__(self, folder: TapeStore, name: str, plain: str) -> None:
        self.folder, self.name, self.plain = folder, name, plain

    def stats(self, tape: str) -> StoreStats:
        return self.folder.stats(self.plain)

    def read(self, tape: str, start: int = 1, stop: int | None = None) -> list[TapeEntry]:
        return self.folder.read(self.plain, start, stop)


def _append_lines(path: Path, entries: list[TapeEntry]) -> int:
    """Append entries with their own ids, under the lock every file-store writer takes."""
    with FileLock(str(path) + ".lock", mode=0o600):
        data = b"".join(entry.to_line() for entry in entries)
        if path.exists() and path.stat().st_size:
            with open(path, "rb") as handle:
                handle.seek(-1, os.SEEK_END)
                if handle.read(1) != b"\n":  # a torn last line stays; ours start on a fresh one
                    data = b"\n" + data
        _append_bytes(path, data)
    return len(entries)


def _append_bytes(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
