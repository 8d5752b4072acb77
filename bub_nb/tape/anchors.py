"""Anchors: the default view selector, slicing a tape by its anchors, and anchors as ``Tape.anchors()`` lists them.

Slicing works on a store and a tape name, so the ``Tape`` and the query builder share it without either calling
the other.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from bub_nb.errors import AnchorNotFoundError, TapeError
from bub_nb.markup import clean_html, code_span, markdown_text
from bub_nb.tape._lines import dumps
from bub_nb.tape.citations import state_references, state_sources, state_uncited
from bub_nb.tape.entries import KINDS, TapeEntry, is_phase_anchor
from bub_nb.tape.stores.protocol import AnchorRef, TapeStore


class _LastAnchor:
    """Select from the last phase anchor on (inclusive). The default of every view."""

    _instance: _LastAnchor | None = None

    def __new__(cls) -> _LastAnchor:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "LAST_ANCHOR"

    def __reduce__(self) -> str:
        return "LAST_ANCHOR"


LAST_ANCHOR: Final = _LastAnchor()


class StoredTape(Protocol):
    """A named tape in a store: what queries and frames read (``Tape`` is one)."""

    @property
    def name(self) -> str: ...

    @property
    def store(self) -> TapeStore: ...


@dataclass(frozen=True, slots=True)
class NamedTape:
    """A tape named in a store, read without the Tape API (an archive a home's frame takes in, say)."""

    name: str
    store: TapeStore


def of_kinds(entries: list[TapeEntry], kinds: Sequence[str]) -> list[TapeEntry]:
    """The entries of those kinds (all of them when ``kinds`` is empty)."""
    return [e for e in entries if e.kind in kinds] if kinds else entries


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


@dataclass(frozen=True, slots=True)
class AnchorSummary:
    """An anchor as listed by ``Tape.anchors()``: where it is, what it is called, what it carries."""

    id: int
    name: str
    state: dict[str, Any] | None
    date: str

    @property
    def sources(self) -> tuple[int, ...]:
        """The entries this anchor's summary cites (``()`` for a plain handoff), only those before the anchor."""
        return state_sources(self.state, self.id - 1)

    @property
    def references(self) -> tuple[str, ...]:
        """The ``tape://`` addresses its summary cites: entries of other tapes its carried lines came from."""
        return state_references(self.state)

    @property
    def uncited(self) -> tuple[str, ...] | None:
        """The sentences of its summary that cite nothing; ``None`` when the state does not say."""
        return state_uncited(self.state)

    def _citations_note(self) -> str:
        uncited = self.uncited
        if not self.sources and uncited is None:
            return ""
        cites = ", ".join(f"#{entry_id}" for entry_id in self.sources) or "nothing"
        return f" · cites {cites}" + (f", {len(uncited)} uncited sentences" if uncited else "")

    def to_markdown(self) -> str:
        state = code_span(dumps(self.state).decode()) if self.state else ""
        where = markdown_text(f"#{self.id}, {self.date[:19]}{self._citations_note()}")
        return f"anchor **{markdown_text(self.name)}** ({where}) {state}"

    def _repr_html_(self) -> str:
        state = html.escape(dumps(self.state).decode()) if self.state else ""
        where = html.escape(f"#{self.id} {self.date[:19]}{self._citations_note()}")
        return clean_html(
            f"<span>anchor <b>{html.escape(self.name)}</b> <small>{where}</small> <code>{state}</code></span>"
        )
