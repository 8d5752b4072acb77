"""Other agents' logs (Claude Code, Codex CLI, llm, the Agents SDK, ATIF) written as new tapes in Bub's format."""

from __future__ import annotations

from bub_nb.imports.discover import DiscoveryReport, FoundLog, discover_logs, find_logs
from bub_nb.imports.formats import FORMATS, detect_format
from bub_nb.imports.importer import import_log
from bub_nb.imports.report import ImportReport
from bub_nb.imports.usage import agents_usage

__all__ = [
    "FORMATS",
    "DiscoveryReport",
    "FoundLog",
    "ImportReport",
    "agents_usage",
    "detect_format",
    "discover_logs",
    "find_logs",
    "import_log",
]
