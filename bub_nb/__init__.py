"""bub_nb: Bub's append-only tape model in Jupyter."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from bub_nb import _aliases

# The layers above the tape plug Tape.view() and Tape.memory in as they are imported.
from bub_nb import context as _context  # noqa: F401
from bub_nb import memory as _memory  # noqa: F401
from bub_nb.context import CheckFailed, ContextDiff, TurnView, View, check, diff_views, window
from bub_nb.errors import BubNbError
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

if TYPE_CHECKING:
    from bub_nb.agent import Agent, Turn, hookimpl, register_plugin, tool, unregister_plugin
    from bub_nb.agent.replay import replay
    from bub_nb.context.retention import retention
    from bub_nb.imports import ImportReport, agents_usage, discover_logs, import_log
    from bub_nb.tape.corrections.by_value import redact_text
    from bub_nb.tape.frames.overview import class_overview
    from bub_nb.tape.frames.tapes import read_tapes
    from bub_nb.tape.reports.prices import set_prices

    __version__: str

_aliases.install()  # the deep paths earlier releases documented

# Library logging stays silent unless the application configures it.
logging.getLogger("bub_nb").addHandler(logging.NullHandler())

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

# Heavier parts (pandas, openai, pluggy) load on first use, so `import bub_nb` stays cheap.
_LAZY = {
    "read_tapes": "bub_nb.tape.frames.tapes",
    "redact_text": "bub_nb.tape.corrections.by_value",
    "class_overview": "bub_nb.tape.frames.overview",
    "Agent": "bub_nb.agent",
    "Turn": "bub_nb.agent",
    "tool": "bub_nb.agent",
    "hookimpl": "bub_nb.agent",
    "register_plugin": "bub_nb.agent",
    "unregister_plugin": "bub_nb.agent",
    "replay": "bub_nb.agent.replay",
    "retention": "bub_nb.context.retention",
    "set_prices": "bub_nb.tape.reports.prices",
    "import_log": "bub_nb.imports",
    "ImportReport": "bub_nb.imports",
    "discover_logs": "bub_nb.imports",
    "agents_usage": "bub_nb.imports",
}


def __getattr__(name: str) -> Any:
    if name == "__version__":  # the one version is pyproject.toml's; reading metadata waits until asked
        from importlib.metadata import version

        return version("bub_nb")
    if name == "export":  # bub_nb.export.otel(tape), bub_nb.export.atif(tape): a subpackage, loaded when asked
        import importlib

        return importlib.import_module("bub_nb.export")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'bub_nb' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


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
