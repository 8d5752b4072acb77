"""Context: tape entries become the messages a model sees, chosen by a strategy."""

from __future__ import annotations

from bub_nb.context.messages import Rendering, anchor_message, render_entries
from bub_nb.context.strategies import (
    FULL,
    LAST_ANCHOR,
    ContextStrategy,
    FullTape,
    LastAnchor,
    Mode,
    NamedAnchor,
    Selection,
    Window,
    as_strategy,
    parse_mode,
    window,
)
from bub_nb.context.view import RunUsage, View, build_view, last_run_usage, view_from_selection

__all__ = [
    "FULL",
    "LAST_ANCHOR",
    "ContextStrategy",
    "FullTape",
    "LastAnchor",
    "Mode",
    "NamedAnchor",
    "Rendering",
    "RunUsage",
    "Selection",
    "View",
    "Window",
    "anchor_message",
    "as_strategy",
    "build_view",
    "last_run_usage",
    "parse_mode",
    "render_entries",
    "view_from_selection",
    "window",
]
