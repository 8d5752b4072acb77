"""Optional notebook recording: executed code cells become ``notebook.cell`` events on the tape."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bub_nb.errors import TapeError
from bub_nb.tape import Tape
from bub_nb.tape.events import NOTEBOOK_CELL

SKIPPED_PREFIXES = (",", "%%bub", "%bub", "%tape record", "%handoff", "%context", "%memory", "%anchors")
PRIVATE_MAGICS = ("%mcp", "%%mcp")
"""A cell holding one of these on any line is never recorded nor shown to the model: ``%mcp add`` carries
headers and ``env`` values, which are often secrets."""
_MAX_SOURCE = 8000


def skipped_cell(source: str) -> bool:
    """Whether a cell stays off the tape and out of ``notebook.cells``: bub_nb's own commands, and any cell with
    an ``%mcp`` line."""
    source = source.strip()
    if not source or source.startswith(SKIPPED_PREFIXES):
        return True
    return any(line.lstrip().startswith(PRIVATE_MAGICS) or "magic('mcp'" in line for line in source.splitlines())


def cell_event(execution_count: int | None, source: str, error: BaseException | None) -> dict[str, Any]:
    """The data of one ``notebook.cell`` event; long sources are cut, with a note saying so."""
    data: dict[str, Any] = {"cell": execution_count, "source": source[:_MAX_SOURCE]}
    if len(source) > _MAX_SOURCE:
        data["truncated"] = len(source) - _MAX_SOURCE
    if error is not None:
        data["error"] = f"{type(error).__name__}: {error}".strip()
    return data


class CellListener:
    """Something told of every cell that ran, through IPython's ``post_run_cell`` event, between ``start`` and
    ``stop``; it installs no exception handler of any kind."""

    def __init__(self, shell: Any) -> None:
        self._shell = shell
        self.active = False

    def start(self) -> None:
        if not self.active:
            self._shell.events.register("post_run_cell", self.post_run_cell)
            self.active = True

    def stop(self) -> None:
        if self.active:
            self._shell.events.unregister("post_run_cell", self.post_run_cell)
            self.active = False

    def post_run_cell(self, result: Any) -> None:
        raise NotImplementedError


class CellRecorder(CellListener):
    """Records executed cells as ``notebook.cell`` events on the current tape."""

    def __init__(self, shell: Any, tape: Callable[[], Tape]) -> None:
        super().__init__(shell)
        self._tape = tape

    def start(self) -> None:
        tape = self._tape()
        if tape.read_only:
            raise TapeError(f"Tape {tape.name!r} opens read-only; cells cannot be recorded on it")
        # Cells recorded before the first anchor would fall outside every phase's view.
        tape.ensure_bootstrap_anchor()
        super().start()

    def post_run_cell(self, result: Any) -> None:
        source = (getattr(result.info, "raw_cell", None) or "").strip()
        if skipped_cell(source):
            return
        tape = self._tape()
        if tape.read_only:
            return  # an archive opened with %tape use; recording goes on when a writable tape is back
        error = result.error_in_exec or result.error_before_exec
        count = result.execution_count
        tape.append_event(NOTEBOOK_CELL, cell_event(count, source, error), cell=count, source="notebook")
