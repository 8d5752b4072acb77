"""Seams where the layers above plug capabilities into ``Tape``, so imports keep pointing down.

``Tape.view()`` and ``Tape.view_of_turn()`` need the context layer and ``Tape.memory`` the memory
zone; both live above the tape layer. They register themselves here when they are imported, and the
first call that needs one imports its layer by name, so a tape works however little of bub_nb was imported.
The protocols say what the tape layer may rely on; ``bub_nb.context.View`` and ``bub_nb.memory.MemoryZone``
satisfy them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from bub_nb.errors import BubNbError

if TYPE_CHECKING:
    from bub_nb.tape.anchors import AnchorSummary
    from bub_nb.tape.entries import TapeEntry


class View(Protocol):
    """What the model would see: its messages, the entries they came from, and what they cost."""

    @property
    def messages(self) -> Sequence[dict[str, Any]]: ...

    @property
    def entry_ids(self) -> tuple[int, ...]: ...

    @property
    def anchor(self) -> AnchorSummary | None: ...

    @property
    def total_tokens(self) -> int: ...

    @property
    def mode(self) -> str: ...

    def to_messages(self) -> list[dict[str, Any]]: ...

    def to_text(self) -> str: ...


class MemoryVersion(Protocol):
    """One saved version of a memory zone: where it opens and seals, and the entries it holds."""

    @property
    def open_id(self) -> int: ...

    @property
    def seal_id(self) -> int: ...

    @property
    def entry_ids(self) -> tuple[int, ...]: ...

    @property
    def current(self) -> bool: ...


class MemoryZone(Protocol):
    """The memory zone on a tape: its versions, and the context it gives the model."""

    def history(self) -> Sequence[MemoryVersion]: ...

    def get_context(self) -> str: ...

    def retracted_notes(self, notes: Sequence[TapeEntry], *, undo: bool = False) -> bool: ...


_providers: dict[str, Callable[..., Any]] = {}
_LAYERS = {"view": "context", "turn_view": "context", "messages": "context", "memory": "memory"}


def _provider(capability: str) -> Callable[..., Any]:
    """The registered factory, importing the layer that registers it on first use; a ``BubNbError`` for a name no
    layer provides."""
    if capability not in _providers:
        layer = _LAYERS.get(capability)
        if layer is None:
            raise BubNbError(f"No layer provides {capability!r}; known: {', '.join(sorted(_LAYERS))}")
        importlib.import_module(f"bub_nb.{layer}")  # a seam: the layer above fills it as it is imported
    return _providers[capability]


def provide(capability: str, factory: Callable[..., Any]) -> None:
    """Register the factory behind ``capability`` (``"view"``, ``"turn_view"``, ``"memory"``, ``"messages"``)."""
    _providers[capability] = factory


def view(tape: Any, mode: Any) -> View:
    """The view of ``tape`` in ``mode``, built by the context layer."""
    return _provider("view")(tape, mode)  # type: ignore[no-any-return]


def view_of_turn(tape: Any, run: Any) -> View:
    """The request a recorded turn sent, rebuilt by the context layer."""
    return _provider("turn_view")(tape, run)  # type: ignore[no-any-return]


def memory(tape: Any) -> MemoryZone:
    """The memory zone of ``tape``, from the memory layer."""
    return _provider("memory")(tape)  # type: ignore[no-any-return]


def messages(entries: Sequence[TapeEntry]) -> list[dict[str, Any]]:
    """Entries as chat messages, rendered by the context layer."""
    return _provider("messages")(entries)  # type: ignore[no-any-return]
