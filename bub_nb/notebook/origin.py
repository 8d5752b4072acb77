"""Which notebook wrote a tape: a ``notebook`` event the first time a notebook's cell writes to it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bub_nb.errors import BubNbError
from bub_nb.tape import Tape, TapeEntry, current_notebook
from bub_nb.tape.events import NOTEBOOK

if TYPE_CHECKING:
    from bub_nb.notebook.session import NotebookSession


def _names_notebook(entries: list[TapeEntry], path: str) -> bool:
    data = entries[0].payload.get("data") if entries and entries[0].name == NOTEBOOK else None
    return isinstance(data, dict) and data.get("path") == path


@dataclass(frozen=True)
class _Mark:
    """A tape that names this notebook: the event that does, and the tape's size when that was last seen."""

    event_id: int
    path: str
    size: tuple[int, int | None]


def _size(tape: Tape) -> tuple[int, int | None]:
    stats = tape.stats()
    return stats.last_id, stats.size_bytes


def _notebook_event(tape: Tape, path: str) -> int:
    """The id of the newest ``notebook`` event on ``tape``, if it names ``path``; else 0."""
    for entry in tape.iter_reverse(kinds=("event",)):
        if entry.name == NOTEBOOK:
            return entry.id if _names_notebook([entry], path) else 0
    return 0


class NotebookOrigin:
    """Listens to IPython's ``pre_run_cell``/``post_run_cell``: when a cell wrote to the current tape
    and the tape does not yet name this notebook, one event records the notebook's path after the
    cell's own entries (so a refused command still writes nothing). Once it does, a cell that changed
    the tape reads that one entry back, so a tape that started over (``%tape reset``) is named again;
    a cell that did not costs one look at the tape's size."""

    def __init__(self, shell: Any, session: NotebookSession) -> None:
        self._shell = shell
        self._session = session
        self._seen: dict[tuple[str, str], int] = {}
        self._marked: dict[tuple[str, str], _Mark] = {}
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

    def _tape(self, *, verify: bool = True) -> tuple[Tape, int] | None:
        """The session's tape and its last id, unless it still names this notebook (told by its size, or by
        reading the event back once it changed); a tape file not yet made is not touched."""
        try:
            tape = self._session.tape  # opening writes nothing
            key = (tape.name, str(tape.path))
            mark = self._marked.get(key)
            if mark is not None:
                if not verify:
                    return None  # before a cell: whether it still names the notebook is seen after
                size = _size(tape)
                if size == mark.size:
                    return None  # unchanged since the event was seen: a reset would have changed it
                if _names_notebook(tape.read(mark.event_id, mark.event_id + 1), mark.path):
                    self._marked[key] = _Mark(mark.event_id, mark.path, size)
                    return None
                del self._marked[key]  # the tape started over: the notebook is named again after this cell
                self._seen[key] = 0
            file = tape.path
            return tape, 0 if file is not None and not file.exists() else tape.last_id
        except (BubNbError, OSError):
            return None  # a tape setting that cannot be used is reported by the magic that uses it

    def pre_run_cell(self, info: Any = None) -> None:
        found = self._tape(verify=False)
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
        if notebook.source in ("cwd", "kernel"):
            return  # no notebook is known, only a folder or a kernel
        path = str(notebook.workspace / notebook.session_id)
        event_id = _notebook_event(tape, path)
        if not event_id:
            data = {"path": path, "source": notebook.source}
            event_id = tape.append_event(NOTEBOOK, data, source="notebook").id
        self._marked[key] = _Mark(event_id, path, _size(tape))
        self._seen[key] = tape.last_id
