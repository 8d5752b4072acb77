"""Where tapes live and which notebook is running: the Bub home, its tapes folder, and the current notebook.

Jupyter's server and ``bub-nb run`` tell the kernel its notebook (``JPY_SESSION_NAME``); nbclient,
nbconvert and papermill do not. What they all do is run in a process whose command line names the
notebook (``jupyter nbconvert --execute a.ipynb``, ``papermill a.ipynb out.ipynb``, ``python run.py
a.ipynb``), and that process is the kernel's parent. psutil reads it where it is installed; on Linux
``/proc`` does without.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.events import NOTEBOOK
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

    @property
    def tape_name(self) -> str:
        return session_tape_name(self.workspace, self.session_id)


def current_notebook() -> NotebookLocation:
    """Find the running notebook: ``JPY_SESSION_NAME``, VS Code's ``__vsc_ipynb_file__``, papermill's
    ``PAPERMILL_INPUT_PATH`` parameter, the notebook the kernel's launcher names, else the cwd."""
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
    from bub_nb.tape.locations import launching_notebook

    launched = launching_notebook()
    if launched is not None:
        return NotebookLocation(launched.parent, launched.name, "launcher")
    return NotebookLocation(Path.cwd(), DEFAULT_SESSION_ID, "cwd")


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


def _named_notebook(args: list[str], cwd: Path | None) -> Path | None:
    """The one notebook a command line names (papermill's first: its input), resolved against ``cwd``."""
    found: list[Path] = []
    for arg in args[1:]:
        if not arg.endswith(".ipynb") or arg.startswith("-"):
            continue
        path = Path(arg).expanduser()
        if not path.is_absolute() and cwd is not None:
            path = cwd / path
        if path.is_file() and path.resolve() not in found:
            found.append(path.resolve())
    if len(found) == 1 or (found and any("papermill" in Path(a).name for a in args[:2])):
        return found[0]
    return None  # none, or several with no way to tell which this kernel runs


def _is_kernel() -> bool:
    return "ipykernel" in Path(sys.argv[0] if sys.argv else "").name


@functools.cache
def launching_notebook() -> Path | None:
    """The notebook named by the process that launched this kernel, if this process is a kernel."""
    if not _is_kernel():
        return None
    pid = os.getppid()
    for _ in range(_ANCESTORS):
        process = _process(pid)
        if process is None:
            return None
        args, cwd, parent = process
        notebook = _named_notebook(args, cwd)
        if notebook is not None:
            return notebook
        if parent <= 1:
            return None
        pid = parent
    return None
