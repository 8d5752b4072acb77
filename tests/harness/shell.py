"""A real IPython ``InteractiveShell`` with bub_nb loaded, whose cells re-raise their errors."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from IPython.core.displaypub import CapturingDisplayPublisher
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell


class Notebook:
    """A shell with bub_nb loaded, capturing what the cells display."""

    def __init__(self, shell: InteractiveShell) -> None:
        self.shell = shell
        self.displays = CapturingDisplayPublisher()
        shell.display_pub = self.displays

    def run(self, source: str) -> Any:
        result = self.shell.run_cell(source, store_history=True)
        self.execution_count = result.execution_count
        result.raise_error()
        return result.result

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
def loaded_shell() -> Iterator[Notebook]:
    """A fresh shell with bub_nb loaded, unloaded and cleared afterwards."""
    InteractiveShell.clear_instance()
    notebook = Notebook(InteractiveShell.instance())
    notebook.run("%load_ext bub_nb")
    try:
        yield notebook
    finally:
        notebook.run("%unload_ext bub_nb")
        InteractiveShell.clear_instance()
