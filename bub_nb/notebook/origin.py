"""Which notebook wrote a tape: a ``notebook`` event the first time a notebook's cell writes to it."""

from __future__ import annotations

from typing import Any

from bub_nb.errors import BubNbError
from bub_nb.tape import Tape, current_notebook
from bub_nb.tape.events import NOTEBOOK
from bub_nb.tape.locations import recorded_notebook


class NotebookOrigin:
    """Listens to IPython's ``pre_run_cell``/``post_run_cell``: when a cell wrote to the current tape
    and the tape does not yet name this notebook, one event records the notebook's path after the
    cell's own entries (so a refused command still writes nothing)."""

    def __init__(self, shell: Any, session: Any) -> None:
        self._shell = shell
        self._session = session
        self._seen: dict[tuple[str, str], int] = {}
        self._marked: set[tuple[str, str]] = set()
        self.active = False

    def start(self) -> None:
        if not self.active:
            self._shell.events.register("pre_run_cell", self.pre_run_cell)
            self._shell.events.register("post_run_cell", self.post_run_cell)
            self.active = True

    def stop(self) -> None:
        if self.active:
            self._shell.events.unregister("pre_run_cell", self.pre_run_cell)
            self._shell.events.unregister("post_run_cell", self.post_run_cell)
            self.active = False

    def _tape(self) -> tuple[Tape, int] | None:
        """The session's tape and its last id, unless it already names this notebook (then nothing is read,
        so a cell pays nothing once the event is written); a tape file not yet made is not touched."""
        try:
            tape: Tape = self._session.tape  # opening writes nothing
            if (tape.name, str(tape.path)) in self._marked:
                return None
            path = tape.path
            return tape, 0 if path is not None and not path.exists() else tape.last_id
        except (BubNbError, OSError):
            return None  # a tape setting that cannot be used is reported by the magic that uses it

    def pre_run_cell(self, info: Any = None) -> None:
        found = self._tape()
        if found is not None:
            tape, last_id = found
            self._seen[(tape.name, str(tape.path))] = last_id

    def post_run_cell(self, result: Any = None) -> None:
        found = self._tape()
        if found is None or found[0].read_only:
            return
        tape, last_id = found
        key = (tape.name, str(tape.path))
        before = self._seen.get(key)
        self._seen[key] = last_id
        if before is None or last_id <= before or key in self._marked:
            return
        notebook = current_notebook()
        if notebook.source == "cwd":
            return  # no notebook is known, only a folder
        self._marked.add(key)
        path = str(notebook.workspace / notebook.session_id)
        if recorded_notebook(tape) != path:
            self._seen[key] = tape.append_event(
                NOTEBOOK, {"path": path, "source": notebook.source}, source="notebook"
            ).id
