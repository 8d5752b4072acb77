"""The memory each tape was last seen with, so a turn reads the memory zone once per change, not once per turn."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

from bub_nb.memory.zone import MemoryZone
from bub_nb.tape import AnchorRef, is_phase_anchor

if TYPE_CHECKING:
    from bub_nb.memory.snapshot import MemorySnapshot
    from bub_nb.tape import Tape, TapeStore

# Per tape: its store, the newest memory anchor then, the snapshot read then.
_memory_seen: weakref.WeakKeyDictionary[Tape, tuple[TapeStore, AnchorRef | None, MemorySnapshot]] = (
    weakref.WeakKeyDictionary()
)


def memory_of(tape: Tape, *, ensure: bool) -> MemorySnapshot:
    """The tape's memory zone for the system prompt; with ``ensure`` written first if there is none.

    Every change to the memory zone appends ``memory/...`` anchors, so while the newest one is the one
    seen last time, the snapshot read then is still the memory: the zone is read once per change, not
    on every turn (kept per tape, because a notebook makes an agent per cell).
    """
    store = tape.store
    seen = _memory_seen.get(tape)
    if (
        seen is not None
        and seen[0] is store
        and (seen[2].version > 0 or not ensure)
        and seen[1] == _newest_memory_anchor(store, tape.name)
    ):
        return seen[2]
    zone = MemoryZone(tape)
    snapshot: MemorySnapshot = zone.read()
    if snapshot.version == 0 and ensure:  # no zone yet; ensure() alone would look for one twice
        snapshot = zone.ensure()
    _memory_seen[tape] = (store, _newest_memory_anchor(store, tape.name), snapshot)
    return snapshot


def _newest_memory_anchor(store: TapeStore, tape: str) -> AnchorRef | None:
    for ref in reversed(store.anchors(tape)):
        if not is_phase_anchor(ref.name):
            return ref
    return None
