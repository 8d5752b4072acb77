"""Other agents' logs (Claude Code, Codex CLI, llm, the Agents SDK, ATIF) written as new tapes in Bub's format."""

from __future__ import annotations

from bub_nb.imports.formats import FORMATS, detect_format
from bub_nb.imports.importer import import_log
from bub_nb.imports.report import ImportReport

__all__ = ["FORMATS", "ImportReport", "detect_format", "import_log"]
