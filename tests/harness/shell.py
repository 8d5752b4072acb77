"""A real IPython ``InteractiveShell`` with bub_nb loaded, whose cells re-raise their errors."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from IPython.core.displaypub import CapturingDisplayPublisher
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell


@dataclass
class Cell:
    """What one cell did, run as Jupyter runs it: its error (shown, not raised), and everything it printed."""

    error: BaseException | None
    out: str
    err: str


class Notebook:
    """A shell with bub_nb loaded, capturing what the cells display. ``run`` re-raises a cell's error, as a test
    wants; ``cell`` shows it as Jupyter does and returns what was printed (it needs ``capsys``)."""

    def __init__(self, shell: InteractiveShell, capsys: pytest.CaptureFixture[str] | None = None) -> None:
        self.shell = shell
        self.capsys = capsys
        self.displays = CapturingDisplayPublisher()
        shell.display_pub = self.displays

    def run(self, source: str) -> Any:
        result = self.shell.run_cell(source, store_history=True)
        self.execution_count = result.execution_count
        result.raise_error()
        return result.result

    def cell(self, source: str) -> Cell:
        """Run a cell; logging is left as a user's session has it (no handlers), so stray logs would show."""
        assert self.capsys is not None, "Notebook.cell reads what the cell printed: pass capsys to loaded_shell"
        root = logging.getLogger()
        handlers, root.handlers = root.handlers, []
        self.capsys.readouterr()
        try:
            result = self.shell.run_cell(source, store_history=True)
        finally:
            root.handlers = handlers
        captured = self.capsys.readouterr()
        return Cell(result.error_in_exec or result.error_before_exec, captured.out, captured.err)

    def refused(self, source: str, match: str) -> None:
        """The cell is one UsageError matching ``match``, and the tape did not change."""
        before = len(self.tape)
        with pytest.raises(UsageError, match=match):
            self.run(source)
        assert len(self.tape) == before, f"{source!r} wrote to the tape before it was refused"

    @property
    def magics(self) -> Any:
        return next(c for c in self.shell.configurables if type(c).__name__ == "BubMagics")

    @property
    def tape(self) -> Any:
        return self.magics.session.tape

    def shown(self) -> str:
        """Everything displayed so far, as text (Markdown sources and plain reprs)."""
        parts = []
        for output in self.displays.outputs:
            data = output["data"]
            parts.append(data.get("text/markdown") or data.get("text/plain") or "")
        return "\n".join(parts)


@contextmanager
def loaded_shell(capsys: pytest.CaptureFixture[str] | None = None) -> Iterator[Notebook]:
    """A fresh shell with bub_nb loaded, unloaded and cleared afterwards."""
    InteractiveShell.clear_instance()
    notebook = Notebook(InteractiveShell.instance(), capsys)
    notebook.run("%load_ext bub_nb")
    try:
        yield notebook
    finally:
        notebook.run("%unload_ext bub_nb")
        InteractiveShell.clear_instance()
