"""bub_nb: Bub's append-only tape model in Jupyter.

Every name below loads on first use (PEP 562), so ``import bub_nb`` costs almost nothing and a notebook pays for
pandas, openai or pluggy only when it reaches for them.
"""

from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bub_nb.agent import Agent, Turn, hookimpl, register_plugin, tool, unregister_plugin
    from bub_nb.agent.replay import replay
    from bub_nb.context import CheckFailed, ContextDiff, TurnView, View, check, diff_views, window
    from bub_nb.context.retention import retention
    from bub_nb.errors import BubNbError
    from bub_nb.imports import ImportReport, agents_usage, discover_logs, import_log
    from bub_nb.memory import MemoryZone
    from bub_nb.tape import (
        LAST_ANCHOR,
        AnchorSummary,
        FileTapeStore,
        MemoryTapeStore,
        Tape,
        TapeEntry,
        TapeInfo,
        TapeStore,
        open_tape,
        resolve,
        session_tape_name,
    )
    from bub_nb.tape.corrections.by_value import redact_text
    from bub_nb.tape.frames.overview import class_overview
    from bub_nb.tape.frames.tapes import read_tapes
    from bub_nb.tape.reports.prices import set_prices

    __version__: str

# Library logging stays silent unless the application configures it.
logging.getLogger("bub_nb").addHandler(logging.NullHandler())

#: Each public name and the module that holds it.
_HOMES = {
    "Agent": "bub_nb.agent",
    "AnchorSummary": "bub_nb.tape",
    "BubNbError": "bub_nb.errors",
    "CheckFailed": "bub_nb.context",
    "ContextDiff": "bub_nb.context",
    "FileTapeStore": "bub_nb.tape",
    "ImportReport": "bub_nb.imports",
    "LAST_ANCHOR": "bub_nb.tape",
    "MemoryTapeStore": "bub_nb.tape",
    "MemoryZone": "bub_nb.memory",
    "Tape": "bub_nb.tape",
    "TapeEntry": "bub_nb.tape",
    "TapeInfo": "bub_nb.tape",
    "TapeStore": "bub_nb.tape",
    "Turn": "bub_nb.agent",
    "TurnView": "bub_nb.context",
    "View": "bub_nb.context",
    "agents_usage": "bub_nb.imports",
    "check": "bub_nb.context",
    "class_overview": "bub_nb.tape.frames.overview",
    "diff_views": "bub_nb.context",
    "discover_logs": "bub_nb.imports",
    "hookimpl": "bub_nb.agent",
    "import_log": "bub_nb.imports",
    "open_tape": "bub_nb.tape",
    "read_tapes": "bub_nb.tape.frames.tapes",
    "redact_text": "bub_nb.tape.corrections.by_value",
    "register_plugin": "bub_nb.agent",
    "replay": "bub_nb.agent.replay",
    "resolve": "bub_nb.tape",
    "retention": "bub_nb.context.retention",
    "session_tape_name": "bub_nb.tape",
    "set_prices": "bub_nb.tape.reports.prices",
    "tool": "bub_nb.agent",
    "unregister_plugin": "bub_nb.agent",
    "window": "bub_nb.context",
}

__all__ = [
    "LAST_ANCHOR",
    "Agent",
    "AnchorSummary",
    "BubNbError",
    "CheckFailed",
    "ContextDiff",
    "FileTapeStore",
    "ImportReport",
    "MemoryTapeStore",
    "MemoryZone",
    "Tape",
    "TapeEntry",
    "TapeInfo",
    "TapeStore",
    "Turn",
    "TurnView",
    "View",
    "__version__",
    "agents_usage",
    "check",
    "class_overview",
    "diff_views",
    "discover_logs",
    "hookimpl",
    "import_log",
    "load_ipython_extension",
    "open_tape",
    "read_tapes",
    "redact_text",
    "register_plugin",
    "replay",
    "resolve",
    "retention",
    "session_tape_name",
    "set_prices",
    "tool",
    "unload_ipython_extension",
    "unregister_plugin",
    "window",
]


def __getattr__(name: str) -> Any:
    if name == "__version__":  # the one version is pyproject.toml's; reading metadata waits until asked
        from importlib.metadata import version

        return version("bub_nb")
    if name == "export":  # bub_nb.export.otel(tape), bub_nb.export.atif(tape): a subpackage, loaded when asked
        return importlib.import_module("bub_nb.export")
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'bub_nb' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # asked once: later reads are plain attribute reads
    return value


def __dir__() -> list[str]:
    """Every public name, the lazy ones included, so tab completion offers them before their first use."""
    return sorted({*globals(), *__all__})


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext bub_nb``: register the magics (IPython is imported only now)."""
    from bub_nb.notebook import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext bub_nb``: stop cell recording and drop the magics' configuration."""
    from bub_nb.notebook import unload_ipython_extension as unload

    unload(ipython)
