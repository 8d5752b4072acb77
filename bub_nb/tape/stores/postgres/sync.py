"""Moving tapes between a Bub home's files and a database, in Bub's format, ids and lineage intact.

Both directions copy only what the other side lacks, so running them again is cheap and safe. A tape
whose two copies disagree on an entry they both hold is left alone with an error naming it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from filelock import FileLock

from bub_nb.errors import TapeError
from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.locations import tapes_home
from bub_nb.tape.names import LINEAGE_FILE
from bub_nb.tape.stores.lineage import read_lineage
from bub_nb.tape.stores.postgres.store import PostgresTapeStore
from bub_nb.tape.stores.protocol import TapeStore


@dataclass
class Copied:
    """What one push or pull moved: new entries per tape, and fork records."""

    entries: dict[str, int] = field(default_factory=dict)
    lineage: int = 0

    @property
    def total(self) -> int:
        return sum(self.entries.values())

    def describe(self, verb: str, where: str) -> str:
        changed = sum(1 for count in self.entries.values() if count)
        return f"{verb} {self.total} new entries in {changed} of {len(self.entries)} tapes {where}" + (
            f", and {self.lineage} fork records" if self.lineage else ""
        )


def _same(a: TapeEntry, b: TapeEntry) -> bool:
    return (a.kind, a.payload, a.meta, a.date) == (b.kind, b.payload, b.meta, b.date)


def _check_agree(name: str, source: TapeStore, target: TapeStore, last_id: int) -> None:
    """Both copies hold the entry at ``last_id`` (the target's last) and it is the same entry."""
    if last_id == 0:
        return
    mine, theirs = target.read(name, last_id, last_id + 1), source.read(name, last_id, last_id + 1)
    if not mine or not theirs or not _same(mine[0], theirs[0]):
        raise TapeError(f"Tape {name!r} differs between the two copies at entry {last_id}; nothing was copied")


def _lineage_key(record: dict[str, Any]) -> tuple[Any, ...]:
    return (record.get("parent"), record.get("child"), record.get("from_id"))


def push(home: str | Path | None, store: PostgresTapeStore) -> Copied:
    """Copy the tapes under ``<home>/tapes`` and their fork lineage into ``store``."""
    from bub_nb.tape.stores.resolve import file_store

    files = file_store(tapes_home(home))
    copied = Copied()
    for name in files.list_tapes():
        last_id = store.stats(name).last_id
        _check_agree(name, files, store, last_id)
        new = files.read(name, last_id + 1)
        copied.entries[name] = store.import_entries(name, new) if new else 0
    known = {_lineage_key(r) for r in store.lineage()}
    for record in read_lineage(files.directory):
        if _lineage_key(record) not in known and {"parent", "child", "from_id"} <= record.keys():
            store.record_lineage({**record, "date": str(record.get("date", ""))})
            copied.lineage += 1
    return copied


def pull(store: PostgresTapeStore, home: str | Path | None) -> Copied:
    """Copy every tape this role may read from ``store`` into ``<home>/tapes`` as Bub's files."""
    from bub_nb.tape.stores.resolve import file_store

    files = file_store(tapes_home(home))
    files.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    copied = Copied()
    for name in store.list_tapes():
        last_id = files.stats(name).last_id
        _check_agree(name, store, files, last_id)
        new = store.read(name, last_id + 1)
        copied.entries[name] = _append_lines(files.path_for(name), new) if new else 0
    known = {_lineage_key(r) for r in read_lineage(files.directory)}
    lines = [orjson.dumps(r) + b"\n" for r in store.lineage() if _lineage_key(r) not in known]
    if lines:
        _append_bytes(files.directory / LINEAGE_FILE, b"".join(lines))
        copied.lineage = len(lines)
    return copied


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
