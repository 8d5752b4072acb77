"""``bub-nb``: the command line (run a notebook headless, list, move, export, import and redact tapes)."""

from __future__ import annotations

from bub_nb.cli.main import main

__all__ = ["main"]
