"""Tapes as pandas DataFrames: one row per entry, the ``df.tape`` accessor, a home's tapes, a class's overview."""

from __future__ import annotations

from typing import Any

from bub_nb.tape.frames.accessor import TapeAccessor, frame_to_entries
from bub_nb.tape.frames.frame import COLUMNS, entries_to_frame, tape_to_frame
from bub_nb.tape.frames.overview import class_overview
from bub_nb.tape.frames.tapes import read_tapes


def read_frame(path: str) -> Any:
    """A tape frame saved with ``df.tape.to_parquet`` or ``df.tape.to_csv``, back with its dtypes."""
    from bub_nb.tape.frames.saved import read_frame as read

    return read(path)


__all__ = [
    "COLUMNS",
    "TapeAccessor",
    "class_overview",
    "entries_to_frame",
    "frame_to_entries",
    "read_frame",
    "read_tapes",
    "tape_to_frame",
]
