"""Seams where the layers above plug capabilities into ``Tape``, so imports keep pointing down.

``Tape.view()`` needs the context layer and ``Tape.memory`` the memory zone; both live above the
tape layer. They register themselves here when ``bub_nb`` is imported.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bub_nb.errors import BubNbError

_providers: dict[str, Callable[..., Any]] = {}


def provide(capability: str, factory: Callable[..., Any]) -> None:
    """Register the factory behind ``capability`` (``"view"``, ``"memory"``, ``"messages"``)."""
    _providers[capability] = factory


def require(capability: str) -> Callable[..., Any]:
    try:
        return _providers[capability]
    except KeyError:
        raise BubNbError(f"Tape capability {capability!r} is not available; import bub_nb first") from None
