"""Forks: writes that go aside for a block, and sessions forked onto a tape of their own (ids renumbered)."""

from __future__ import annotations

from bub_nb.tape.forks.block import ForkBlock, ForkedStore
from bub_nb.tape.forks.session import INTENTION_ANCHOR, check_fork, copy_session, forked_entries, memory_before

__all__ = [
    "INTENTION_ANCHOR",
    "ForkBlock",
    "ForkedStore",
    "check_fork",
    "copy_session",
    "forked_entries",
    "memory_before",
]
