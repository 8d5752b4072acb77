"""Context: tape entries become the messages a model sees, chosen by a strategy."""

from __future__ import annotations

from bub_nb.context.messages import Rendering, anchor_message, entries_to_messages, render_entries
from bub_nb.context.modes import Mode, as_strategy, parse_mode
from bub_nb.context.phases import PHASES, Phases
from bub_nb.context.strategies import (
    FULL,
    ContextStrategy,
    FullTape,
    LastAnchor,
    NamedAnchor,
    Selection,
    Window,
    window,
)
from bub_nb.context.view import RunUsage, View, build_view, last_run_usage, view_from_selection
from bub_nb.tape import extensions
from bub_nb.tape.selectors import LAST_ANCHOR

__all__ = [
    "FULL",
    "LAST_ANCHOR",
    "PHASES",
    "ContextStrategy",
    "FullTape",
    "LastAnchor",
    "Mode",
    "NamedAnchor",
    "Phases",
    "Rendering",
    "RunUsage",
    "Selection",
    "View",
    "Window",
    "anchor_message",
    "as_strategy",
    "build_view",
    "entries_to_messages",
    "last_run_usage",
    "parse_mode",
    "render_entries",
    "view_from_selection",
    "window",
]

# Tape.view() and the DataFrame accessor reach this layer through the tape's extension seam.
extensions.provide("view", build_view)
extensions.provide("messages", entries_to_messages)
