"""Where tapes live and which notebook is running: the Bub home, its tapes folder, and the current notebook.

Jupyter's server and ``bub-nb run`` tell the kernel its notebook (``JPY_SESSION_NAME``); nbclient,
nbconvert and papermill do not. What they all do is run in a process whose command line names the
notebook (``jupyter nbconvert --execute a.ipynb``, ``papermill a.ipynb out.ipynb``, ``python run.py
a.ipynb``), and that process is the kernel's parent. psutil reads it where it is installed; on Linux
``/proc`` does without. When it names several notebooks, or none while notebooks lie in the kernel's
folder, the cells the kernel ran tell which (:mod:`bub_nb.tape.launchers`); when they cannot, the kernel
keeps a tape of its own, never the folder's shared one. ``%run other.ipynb`` and ``ipython other.ipynb``
run that notebook, and its turns go to its tape.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.events import NOTEBOOK
from bub_nb.tape.launchers import folder_notebooks, kernel_id, matching_notebooks, named_notebooks
from bub_nb.tape.names import session_tape_name

DEFAULT_SESSION_ID = "default"


def bub_home(home: str | Path | None = None) -> Path:
    """The Bub home folder: ``home``, else ``$BUB_HOME``, else ``~/.bub``."""
    return Path(home or os.environ.get("BUB_HOME") or "~/.bub").expanduser()


def tapes_home(home: str | Path | None = None) -> Path:
    """The folder holding tape files, ``<bub home>/tapes``, shared with Bub."""
    return bub_home(home) / "tapes"


@dataclass(frozen=True, slots=True)
class NotebookLocation:
    """The notebook a kernel runs, as Bub would see it: a workspace and a session id."""

    workspace: Path
    session_id: str
    source: str
    undecided: tuple[Path, ...] = field(default=(), compare=False)
    """With source ``kernel``: the notebooks this kernel may be running, which the cells it ran do not tell apart."""

    @property
    def tape_name(self) -> str:
        return session_tape_name(self.workspace, self.session_id)

    @property
    def settled(self) -> bool:
        """Whether more cells cannot change which notebook this is (they can while the kernel cannot tell)."""
        return self.source != "kernel"


def current_notebook() -> NotebookLocation:
    """Find the running notebook: one ``%run`` or ``ipython x.ipynb`` is running, ``JPY_SESSION_NAME``, VS Code's
    ``__vsc_ipynb_file__``, papermill's ``PAPERMILL_INPUT_PATH`` parameter, the notebook the kernel's launcher
    names or the cells it ran tell, else the kernel's own (source ``kernel``) when notebooks are near but none
    can be told, else the cwd."""
    running = running_notebook()
    if running is not None:
        return NotebookLocation(running.parent, running.name, "run")
    main = sys.modules.get("__main__")
    candidates = [
        ("JPY_SESSION_NAME", os.environ.get("JPY_SESSION_NAME")),
        ("__vsc_ipynb_file__", getattr(main, "__vsc_ipynb_file__", None)),
        ("PAPERMILL_INPUT_PATH", getattr(main, "PAPERMILL_INPUT_PATH", None)),
    ]
    for source, value in candidates:
        if isinstance(value, str) and value.strip():
            path = Path(value).expanduser()
            if not path.is_absolute():
                path = path if path.exists() else Path.cwd() / path.name
            return NotebookLocation(path.resolve().parent, path.name, source)
    told = _told_by_the_launcher()
    return told if told is not None else NotebookLocation(Path.cwd(), DEFAULT_SESSION_ID, "cwd")


_cells_run: Callable[[], Sequence[str]] | None = None
_told: NotebookLocation | None = None
_read: dict[Path, tuple[float, object]] = {}


def tell_cells_run(cells: Callable[[], Sequence[str]] | None) -> None:
    """Give :func:`current_notebook` the cells this kernel ran, in order (the notebook layer gives IPython's
    input history), to tell which notebook runs when the launcher does not."""
    global _cells_run
    _cells_run = cells


def _told_by_the_launcher() -> NotebookLocation | None:
    global _told
    if _told is not None:
        return _told
    launched = launching_notebooks()
    if launched is None:
        return None  # not a kernel
    notebooks, launcher_cwd = launched
    if len(notebooks) == 1:
        _told = NotebookLocation(notebooks[0].parent, notebooks[0].name, "launcher")
        return _told
    candidates = notebooks or folder_notebooks(Path.cwd(), launcher_cwd)
    if not candidates:
        return None  # a console, or a kernel no notebook is near: the folder's tape
    ran = list(_cells_run()) if _cells_run is not None else []
    found = matching_notebooks(candidates, ran, _read)  # type: ignore[arg-type]
    if len(found) == 1:
        _told = NotebookLocation(found[0].parent, found[0].name, "cells")
        return _told
    return NotebookLocation(Path.cwd(), f"kernel-{kernel_id()}", "kernel", found or candidates)


def running_notebook() -> Path | None:
    """The notebook IPython is running as a file (``%run other.ipynb``, ``ipython other.ipynb``), if any: its
    cells run inside ``safe_execfile_ipy``, which holds the notebook's path."""
    if "IPython" not in sys.modules:
        return None
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "safe_execfile_ipy":
            name = frame.f_locals.get("fname")
            if isinstance(name, (str, os.PathLike)) and str(name).endswith(".ipynb"):
                return Path(name).expanduser().resolve()
        frame = frame.f_back  # type: ignore[assignment]
    return None


class _ReadsBackwards(Protocol):
    def iter_reverse(self, kinds: Sequence[str] = ()) -> Iterator[TapeEntry]: ...


class _NamedTape(_ReadsBackwards, Protocol):
    @property
    def name(self) -> str: ...

    def read(self, start: int = 1, stop: int | None = None, kinds: Sequence[str] = ()) -> list[TapeEntry]: ...


_HASHED = re.compile(r"[0-9a-f]{16}__[0-9a-f]{16}")


def readable_tape_name(tape: _NamedTape) -> str:
    """A tape's name as people read it: a notebook's hashed tape is ``trip-lesson.ipynb (305ba4c2)``.

    Hashed names come from a notebook's path, which the hash cannot give back: the running notebook
    names its own tape, a ``notebook`` event names the notebook that wrote it. Any other name is shown as it is.
    """
    name = tape.name
    if not _HASHED.fullmatch(name):
        return name
    notebook = current_notebook()
    if notebook.tape_name == name and notebook.session_id != DEFAULT_SESSION_ID:
        return f"{notebook.session_id} ({name[:8]})"
    path = recorded_notebook(tape, look_at=_NAMING_EVENTS) or _first_notebook(tape)
    return f"{Path(path).name} ({name[:8]})" if path else name


def _first_notebook(tape: _NamedTape) -> str | None:
    """The notebook the tape's first ``notebook`` event names, among its first entries (where it is written)."""
    for entry in tape.read(1, _NAMING_EVENTS, kinds=("event",)):
        data = entry.payload.get("data")
        if entry.name == NOTEBOOK and isinstance(data, dict) and isinstance(data.get("path"), str):
            return str(data["path"])
    return None


_NAMING_EVENTS = 64  # a name is shown often: look at the newest events only, never a whole long tape


def recorded_notebook(tape: _ReadsBackwards, look_at: int | None = None) -> str | None:
    """The notebook path the newest ``notebook`` event on ``tape`` records, if any (among its newest ``look_at``
    events when given)."""
    for seen, entry in enumerate(tape.iter_reverse(kinds=("event",))):
        if look_at is not None and seen >= look_at:
            return None
        data = entry.payload.get("data")
        if entry.name == NOTEBOOK and isinstance(data, dict) and isinstance(data.get("path"), str):
            return str(data["path"])
    return None


_ANCESTORS = 3  # the launcher, and a shell or ``jupyter`` wrapper or two above it


def _process(pid: int) -> tuple[list[str], Path | None, int] | None:
    """A process's arguments, working folder and parent id, or ``None`` when they cannot be read."""
    try:
        import psutil
    except ImportError:
        return _proc_process(pid)
    try:
        process = psutil.Process(pid)
        return process.cmdline(), Path(process.cwd()), process.ppid()
    except (psutil.Error, OSError):
        return None


def _proc_process(pid: int) -> tuple[list[str], Path | None, int] | None:
    proc = Path("/proc") / str(pid)
    try:
        args = [a.decode(errors="replace") for a in (proc / "cmdline").read_bytes().split(b"\0") if a]
        status = (proc / "status").read_text()
        parent = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("PPid:"))
        return args, Path(os.readlink(proc / "cwd")), parent
    except (OSError, ValueError, StopIteration):
        return None


def _is_kernel() -> bool:
    return _KERNEL


_KERNEL = "ipykernel" in Path(sys.argv[0] if sys.argv else "").name  # read at import: ``%run`` changes sys.argv


@functools.cache
def launching_notebooks() -> tuple[tuple[Path, ...], Path | None] | None:
    """The notebooks named by the process that launched this kernel (the nearest ancestor naming any) and that
    process's folder, if this process is a kernel."""
    if not _is_kernel():
        return None
    pid = os.getppid()
    first_cwd: Path | None = None
    for _ in range(_ANCESTORS):
        process = _process(pid)
        if process is None:
            break
        args, cwd, parent = process
        first_cwd = first_cwd or cwd
        notebooks = named_notebooks(args, cwd)
        if notebooks:
            return notebooks, cwd
        if parent <= 1:
            break
        pid = parent
    return (), first_cwd


def launching_notebook() -> Path | None:
    """The one notebook the process that launched this kernel names, if it names exactly one."""
    launched = launching_notebooks()
    return launched[0][0] if launched is not None and len(launched[0]) == 1 else None
