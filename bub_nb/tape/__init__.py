"""The tape layer: entries and their vocabulary, stores, anchors, queries, forks, the Tape, frames and reports."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bub_nb.tape.anchors import LAST_ANCHOR, AnchorSummary
from bub_nb.tape.entries import KINDS, TapeEntry, is_phase_anchor
from bub_nb.tape.info import TapeInfo
from bub_nb.tape.locations import current_notebook, tapes_home
from bub_nb.tape.names import TapeAddress, session_tape_name, validate_tape_name
from bub_nb.tape.open import open_tape, resolve
from bub_nb.tape.query import TapeQuery
from bub_nb.tape.stores.file import FileTapeStore
from bub_nb.tape.stores.memory import MemoryTapeStore
from bub_nb.tape.stores.protocol import AnchorRef, StoreStats, TapeStore
from bub_nb.tape.tape import Tape

if TYPE_CHECKING:
    from bub_nb.tape.frames.tapes import read_tapes

__all__ = [
    "KINDS",
    "LAST_ANCHOR",
    "AnchorRef",
    "AnchorSummary",
    "FileTapeStore",
    "MemoryTapeStore",
    "StoreStats",
    "Tape",
    "TapeAddress",
    "TapeEntry",
    "TapeInfo",
    "TapeQuery",
    "TapeStore",
    "current_notebook",
    "is_phase_anchor",
    "open_tape",
    "read_tapes",
    "resolve",
    "session_tape_name",
    "tapes_home",
    "validate_tape_name",
]


def __getattr__(name: str) -> Any:
    if name == "read_tapes":  # imports pandas, so only on use
        from bub_nb.tape.frames.tapes import read_tapes

        return read_tapes
    raise AttributeError(f"module 'bub_nb.tape' has no attribute {name!r}")
