"""The default view selector, defined here so ``Tape.view()`` can name it without the layers above."""

from __future__ import annotations

from typing import Final


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
