"""Fork lineage: which tape was forked from which, kept by the store (a database) or in the folder's lineage file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import jsonlines
import orjson

from bub_nb.tape.entries import utc_now
from bub_nb.tape.names import LINEAGE_FILE
from bub_nb.tape.stores._tape_file import open_binary, open_fd
from bub_nb.tape.stores.protocol import FileBacked, KeepsLineage, TapeStore


def keep_lineage(store: TapeStore, record: dict[str, Any]) -> None:
    """Record one fork where ``store`` keeps lineage: the database itself, or the folder's lineage file."""
    if isinstance(store, KeepsLineage):
        store.record_lineage({**record, "date": utc_now()})
    elif isinstance(store, FileBacked):
        record_lineage(Path(store.directory), record)


def store_lineage(store: TapeStore) -> list[dict[str, Any]]:
    """Every fork ``store`` has recorded; none for a store that keeps no lineage."""
    if isinstance(store, KeepsLineage):
        return store.lineage()
    if isinstance(store, FileBacked):
        return read_lineage(Path(store.directory))
    return []


def record_lineage(directory: Path, record: dict[str, Any]) -> None:
    """Append one fork to the lineage file of a tapes folder."""
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    line = orjson.dumps({**record, "date": utc_now()}, option=orjson.OPT_APPEND_NEWLINE, default=str)
    fd = open_fd(directory / LINEAGE_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, line)  # one write per record, so concurrent forks never interleave
    finally:
        os.close(fd)


def read_lineage(directory: Path) -> list[dict[str, Any]]:
    """Every fork recorded under ``directory``; lines another tool left broken are skipped."""
    path = directory / LINEAGE_FILE
    if not os.path.lexists(path):
        return []
    with open_binary(path) as handle, jsonlines.Reader(handle, loads=orjson.loads) as reader:
        return list(reader.iter(type=dict, skip_invalid=True))
