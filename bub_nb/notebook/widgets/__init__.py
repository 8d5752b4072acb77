"""ipywidgets for tapes: context view and diff, memory zone, tape timeline, class overview, agents as lanes; each
with text and HTML.

ipywidgets itself is imported only when a widget is first built, so the text forms work in any terminal.
"""

from __future__ import annotations

from bub_nb.notebook.widgets.class_overview import ClassOverview
from bub_nb.notebook.widgets.context_diff import ContextDiffView
from bub_nb.notebook.widgets.context_view import ContextView, NextRequestView
from bub_nb.notebook.widgets.lanes import AgentLanes
from bub_nb.notebook.widgets.memory_view import MemoryView
from bub_nb.notebook.widgets.timeline import TapeTimeline

__all__ = [
    "AgentLanes",
    "ClassOverview",
    "ContextDiffView",
    "ContextView",
    "MemoryView",
    "NextRequestView",
    "TapeTimeline",
]
