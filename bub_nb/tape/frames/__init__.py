"""Tapes as pandas DataFrames: one row per entry, the ``df.tape`` accessor, a home's tapes, a class's overview."""

from __future__ import annotations

from bub_nb.tape.frames.accessor import TapeAccessor, frame_to_entries
from bub_nb.tape.frames.frame import COLUMNS, entries_to_frame, tape_to_frame
from bub_nb.tape.frames.overview import class_overview
from bub_nb.tape.frames.tapes import read_tapes

__all__ = [
    "COLUMNS",
    "TapeAccessor",
    "class_overview",
    "entries_to_frame",
    "frame_to_entries",
    "read_tapes",
    "tape_to_frame",
]
