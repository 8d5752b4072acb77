"""Which notebook a headless kernel runs, read from the process that launched it.

Jupyter's server and ``bub-nb run`` tell the kernel its notebook (``JPY_SESSION_NAME``); nbclient,
nbconvert and papermill do not. What they all do is run in a process whose command line names the
notebook (``jupyter nbconvert --execute a.ipynb``, ``papermill a.ipynb out.ipynb``, ``python run.py
a.ipynb``), and that process is the kernel's parent. psutil reads it where it is installed; on Linux
``/proc`` does without.
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

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
