"""Context: tape entries become the messages a model sees, chosen by a strategy."""

from __future__ import annotations

from bub_nb.context.check import CheckFailed, CheckPassed, CheckRefused, NotDone, check
from bub_nb.context.diff import SOURCES, ContextDiff, diff_views, tokens_by_source
from bub_nb.context.messages import Rendering, anchor_message, entries_to_messages, render_entries
from bub_nb.context.phases import PHASES, Phases
from bub_nb.context.recall import RECALL_TOKENS, Bm25, Ranker, Recall
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
from bub_nb.context.turns import RunSpec, TurnOf, TurnView, find_run, parse_run, student_turn, view_of_turn
from bub_nb.context.view import (
    Mode,
    RunUsage,
    View,
    as_strategy,
    build_view,
    last_run_usage,
    parse_mode,
    view_from_selection,
)
from bub_nb.tape import seams
from bub_nb.tape.anchors import LAST_ANCHOR

__all__ = [
    "FULL",
    "LAST_ANCHOR",
    "PHASES",
    "RECALL_TOKENS",
    "SOURCES",
    "Bm25",
    "CheckFailed",
    "CheckPassed",
    "CheckRefused",
    "ContextDiff",
    "ContextStrategy",
    "FullTape",
    "LastAnchor",
    "Mode",
    "NamedAnchor",
    "NotDone",
    "Phases",
    "Ranker",
    "Recall",
    "Rendering",
    "RunSpec",
    "RunUsage",
    "Selection",
    "TurnOf",
    "TurnView",
    "View",
    "Window",
    "anchor_message",
    "as_strategy",
    "build_view",
    "check",
    "diff_views",
    "entries_to_messages",
    "find_run",
    "last_run_usage",
    "parse_mode",
    "parse_run",
    "render_entries",
    "student_turn",
    "tokens_by_source",
    "view_from_selection",
    "view_of_turn",
    "window",
]

# Tape.view() and the DataFrame accessor reach this layer through the tape's extension seam.
seams.provide("view", build_view)
seams.provide("turn_view", view_of_turn)
seams.provide("messages", entries_to_messages)
