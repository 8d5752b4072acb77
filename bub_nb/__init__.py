"""bub_nb: Bub's append-only tape model in Jupyter."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bub_nb.errors import BubNbError
from bub_nb.tape import (
    LAST_ANCHOR,
    AnchorSummary,
    FileTapeStore,
    MemoryTapeStore,
    Tape,
    TapeEntry,
    TapeInfo,
    TapeStore,
    open_tape,
    session_tape_name,
)

if TYPE_CHECKING:
    from bub_nb.tape.frame import read_tapes

__version__ = "0.1.0"

__all__ = [
    "LAST_ANCHOR",
    "AnchorSummary",
    "BubNbError",
    "FileTapeStore",
    "MemoryTapeStore",
    "Tape",
    "TapeEntry",
    "TapeInfo",
    "TapeStore",
    "__version__",
    "load_ipython_extension",
    "open_tape",
    "read_tapes",
    "session_tape_name",
]

_LAZY = {
    "read_tapes": "bub_nb.tape.frame",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'bub_nb' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext bub_nb``: register the magics (IPython is imported only now)."""
    from bub_nb.notebook import load_ipython_extension as load

    load(ipython)
