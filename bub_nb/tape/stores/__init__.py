"""Where tapes are kept: the ``TapeStore`` protocol and its capabilities, in memory, as files, in archives."""

from __future__ import annotations

from bub_nb.tape.stores.archive import ArchiveTapeStore
from bub_nb.tape.stores.file import FileTapeStore
from bub_nb.tape.stores.memory import MemoryTapeStore
from bub_nb.tape.stores.protocol import (
    AnchorList,
    AnchorRef,
    FileBacked,
    Follower,
    KeepsLineage,
    KnowsOwners,
    LocksNotebooks,
    MayBeReadOnly,
    ReadsColumns,
    ReadsRecords,
    SearchesLines,
    StoreStats,
    TapeStore,
    WakesReaders,
)

__all__ = [
    "AnchorList",
    "AnchorRef",
    "ArchiveTapeStore",
    "FileBacked",
    "FileTapeStore",
    "Follower",
    "KeepsLineage",
    "KnowsOwners",
    "LocksNotebooks",
    "MayBeReadOnly",
    "MemoryTapeStore",
    "ReadsColumns",
    "ReadsRecords",
    "SearchesLines",
    "StoreStats",
    "TapeStore",
    "WakesReaders",
]
