"""Slicing a tape by its anchors: after the last phase anchor, after a named anchor, between two.

These rules work on a store and a tape name, so the ``Tape`` and the query builder share them
without either calling the other.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from bub_nb.errors import AnchorNotFoundError, TapeError
from bub_nb.tape.entries import KINDS, TapeEntry, is_phase_anchor
from bub_nb.tape.stores.protocol import AnchorRef, TapeStore


class StoredTape(Protocol):
    """A named tape in a store: what queries and frames read (``Tape`` is one)."""

    @property
    def name(self) -> str: ...

    @property
    def store(self) -> TapeStore: ...


def check_kinds(kinds: Sequence[str]) -> tuple[str, ...]:
    """``kinds`` as a tuple when every one is an entry kind; a ``TapeError`` naming the first that is not."""
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise TapeError(f"Unknown entry kind {unknown[0]!r}; kinds are: {', '.join(KINDS)}")
    return tuple(kinds)


def anchor_order_error(start: str, first: int, end: str, last: int, tape: str) -> TapeError:
    """The error for a slice whose end anchor does not come after its start anchor."""
    return TapeError(f"Anchor {end!r} (#{last}) does not come after anchor {start!r} (#{first}) on tape {tape!r}")


def last_ref(store: TapeStore, tape: str, *, phase: bool = True) -> AnchorRef | None:
    """The newest anchor; with ``phase`` the newest that starts a phase (``memory/...`` anchors do not)."""
    for ref in reversed(store.anchors(tape)):
        if not phase or is_phase_anchor(ref.name):
            return ref
    return None


def find_ref(store: TapeStore, tape: str, name: str) -> AnchorRef:
    """The last anchor called ``name``; an ``AnchorNotFoundError`` listing the anchors there are."""
    refs = store.anchors(tape)
    for ref in reversed(refs):
        if ref.name == name:
            return ref
    raise AnchorNotFoundError(name, [ref.name for ref in refs])


def from_last_anchor(store: TapeStore, tape: str) -> list[TapeEntry]:
    """Entries after the last phase anchor (all entries when there is none)."""
    ref = last_ref(store, tape)
    return store.read(tape, ref.id + 1 if ref else 1)


def after_anchor(store: TapeStore, tape: str, name: str) -> list[TapeEntry]:
    """Entries after the last anchor called ``name``."""
    return store.read(tape, find_ref(store, tape, name).id + 1)


def between_anchors(store: TapeStore, tape: str, start: str, end: str) -> list[TapeEntry]:
    """Entries after the last ``start`` anchor and before the last ``end`` anchor."""
    first, last = find_ref(store, tape, start), find_ref(store, tape, end)
    if last.id <= first.id:
        raise anchor_order_error(start, first.id, end, last.id, tape)
    return store.read(tape, first.id + 1, last.id)
