"""The memory zone: long-term and daily notes kept on the tape, read into the system prompt."""

from __future__ import annotations

from bub_nb.memory.snapshot import DAILY_EVENT, LONG_TERM_EVENT, DailyNote, MemorySnapshot, MemoryZoneError, parse_zone
from bub_nb.memory.zone import DEFAULT_RETENTION_DAYS, OPEN_ANCHOR, SEAL_ANCHOR, MemoryVersion, MemoryZone
from bub_nb.tape import seams

__all__ = [
    "DAILY_EVENT",
    "DEFAULT_RETENTION_DAYS",
    "LONG_TERM_EVENT",
    "OPEN_ANCHOR",
    "SEAL_ANCHOR",
    "DailyNote",
    "MemorySnapshot",
    "MemoryVersion",
    "MemoryZone",
    "MemoryZoneError",
    "parse_zone",
]

# Tape.memory reaches this layer through the tape's extension seam.
seams.provide("memory", MemoryZone)
