"""The memory each tape was last seen with, so a turn reads the memory zone once per change, not once per turn."""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from typing import TYPE_CHECKING

from bub_nb.memory.zone import MemoryZone
from bub_nb.tape import AnchorRef, TapeEntry, is_phase_anchor
from bub_nb.tape.events import REDACT

if TYPE_CHECKING:
    from bub_nb.memory.snapshot import MemorySnapshot
    from bub_nb.tape import Tape, TapeStore

_Marks = tuple[AnchorRef | None, tuple[int, str] | None]

# Per store, per tape name: the tape's marks then (see _marks), the snapshot read then, and the tape's last id then.
# By name, not by the Tape object: a notebook opens the tape of the agent holding the conversation afresh in every
# cell.
_memory_seen: weakref.WeakKeyDictionary[TapeStore, dict[str, tuple[_Marks, MemorySnapshot, int]]] = (
    weakref.WeakKeyDictionary()
)


def memory_of(tape: Tape, *, ensure: bool) -> MemorySnapshot:
    """The tape's memory zone for the system prompt; with ``ensure`` written first if there is none.

    Every change to the memory zone appends ``memory.*`` events (``memory/...`` anchors on older tapes), so
    while the tape's first entry and its newest memory anchor are the ones seen last time, and nothing appended
    since is a memory event or a ``redact`` event (a redaction rewrites the zone in place), the snapshot read then
    is still the memory: the zone is read once per change, not on every turn (kept per tape name in its store,
    because a notebook makes an agent and opens its tape per cell).
    """
    store = tape.store
    seen = _memory_seen.get(store, {}).get(tape.name)
    last = store.stats(tape.name).last_id
    if (
        seen is not None
        and (seen[1].version > 0 or not ensure)
        and seen[0] == _marks(store, tape.name)
        and seen[2] <= last
        and (seen[2] == last or not _changes_memory(store.read(tape.name, seen[2] + 1)))
    ):
        _memory_seen[store][tape.name] = (*seen[:2], last)  # what was appended since is read once
        return seen[1]
    zone = MemoryZone(tape)
    snapshot: MemorySnapshot = zone.read()
    if snapshot.version == 0 and ensure:  # no zone yet; ensure() alone would look for one twice
        snapshot = zone.ensure()
    _memory_seen.setdefault(store, {})[tape.name] = (
        _marks(store, tape.name),
        snapshot,
        store.stats(tape.name).last_id,
    )
    return snapshot


def _changes_memory(entries: Iterable[TapeEntry]) -> bool:
    """Whether ``entries`` write memory, or record a redaction, which may have rewritten the zone in place."""
    return any(
        entry.kind == "event" and (entry.name == REDACT or (entry.name or "").startswith("memory."))
        for entry in entries
    )


def _marks(store: TapeStore, tape: str) -> _Marks:
    """What tells this tape from the one seen before a reset, and its newest memory anchor (older tapes)."""
    first = store.read(tape, 1, 2)
    return _newest_memory_anchor(store, tape), ((first[0].id, first[0].date) if first else None)


def _newest_memory_anchor(store: TapeStore, tape: str) -> AnchorRef | None:
    for ref in reversed(store.anchors(tape)):
        if not is_phase_anchor(ref.name):
            return ref
    return None
