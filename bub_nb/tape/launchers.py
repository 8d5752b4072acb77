"""Which notebook a kernel runs when nothing tells it outright: the notebooks its launcher's command line names
(papermill's input, nbconvert's and ``jupyter execute``'s inputs, never what ``--output`` names), else the
notebooks in its folder, told apart by the cells the kernel has run.

A batch runner (nbclient, nbconvert, ``jupyter execute``, papermill called from a script) sends a notebook's
code cells to the kernel in order and tells it nothing else. The cells the kernel ran so far, found in that
order among one notebook's code cells and no other's, name the notebook. Two notebooks whose cells so far are
the same cannot be told apart: the kernel then says so and keeps a tape of its own.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

_OUTPUT_OPTIONS = ("--output", "--output-dir", "-o")
"""Options whose value is where a runner writes, never the notebook it runs (nbconvert, ``jupyter execute``)."""

FOLDER_NOTEBOOKS = 64
"""How many notebooks of a folder are compared with the cells run, at most (the first by name)."""

_LARGEST = 64 * 1024 * 1024  # a notebook file larger than this is not read for its cells


def named_notebooks(args: Sequence[str], cwd: Path | None) -> tuple[Path, ...]:
    """The notebooks a command line runs, resolved against ``cwd``: papermill's input alone (its first notebook,
    however papermill was started), else every existing notebook it names that no ``--output`` option gives."""
    found: list[Path] = []
    skip_next = False
    for arg in args[1:]:
        if skip_next:
            skip_next = False
            continue
        if arg in _OUTPUT_OPTIONS:
            skip_next = True
            continue
        if not arg.endswith(".ipynb") or arg.startswith("-"):
            continue
        path = Path(arg).expanduser()
        if not path.is_absolute() and cwd is not None:
            path = cwd / path
        if path.is_file() and path.resolve() not in found:
            found.append(path.resolve())
    if found and any(Path(a).name.startswith("papermill") for a in args[:4]):
        return (found[0],)  # papermill INPUT OUTPUT: the output, existing or not, is not what runs
    return tuple(found)


def _source(cell: dict[str, object]) -> str:
    source = cell.get("source", "")
    return ("".join(str(part) for part in source) if isinstance(source, list) else str(source)).strip()


@dataclass(frozen=True, slots=True)
class _Cells:
    path: Path
    cells: tuple[str, ...]


def _read_cells(path: Path, cache: dict[Path, tuple[float, _Cells | None]]) -> _Cells | None:
    """A notebook's code cells (papermill's injected parameters left out), and the notebook they stand for: a
    papermill output stands for the input it records."""
    try:
        stat = path.stat()
        if stat.st_size > _LARGEST:
            return None
        cached = cache.get(path)
        if cached is not None and cached[0] == stat.st_mtime:
            return cached[1]
        document = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    cells = document.get("cells") if isinstance(document, dict) else None
    if not isinstance(cells, list):
        cache[path] = (stat.st_mtime, None)
        return None
    sources = tuple(
        _source(cell)
        for cell in cells
        if isinstance(cell, dict)
        and cell.get("cell_type") == "code"
        and "injected-parameters" not in ((cell.get("metadata") or {}).get("tags") or ())
    )
    found = _Cells(_papermill_input(document, path) or path.resolve(), sources)
    cache[path] = (stat.st_mtime, found)
    return found


def _papermill_input(document: dict[str, object], path: Path) -> Path | None:
    metadata = document.get("metadata")
    papermill = metadata.get("papermill") if isinstance(metadata, dict) else None
    given = papermill.get("input_path") if isinstance(papermill, dict) else None
    if not isinstance(given, str) or not given.endswith(".ipynb"):
        return None
    for candidate in (Path(given).expanduser(), path.parent / given, path.parent / Path(given).name):
        if candidate.is_file():
            return candidate.resolve()
    return None


_PARAMETERS = ("# Parameters", "# Injected Parameters")
"""How the cell papermill injects starts: the one cell run that its input notebook does not hold."""


def _in_order(ran: Sequence[str], cells: Sequence[str]) -> int:
    """How many of the cells run are found, in the order they ran, among ``cells``; 0 unless every one but
    papermill's parameters is (a notebook that holds only some of them is another notebook)."""
    found, at = 0, 0
    for source in ran:
        try:
            at = cells.index(source, at) + 1
        except ValueError:
            if source.startswith(_PARAMETERS):
                continue
            return 0
        found += 1
    return found


def matching_notebooks(
    candidates: Sequence[Path], ran: Sequence[str], cache: dict[Path, tuple[float, _Cells | None]] | None = None
) -> tuple[Path, ...]:
    """The notebooks among ``candidates`` that hold the cells run, in the order they ran; one when the cells tell
    them apart, several when they do not, none when no notebook holds them all."""
    cache = {} if cache is None else cache
    ran = [source.strip() for source in ran if source.strip()]
    scores: dict[Path, int] = {}
    for path in candidates:
        notebook = _read_cells(path, cache)
        if notebook is not None:
            scores[notebook.path] = max(scores.get(notebook.path, 0), _in_order(ran, notebook.cells))
    best = max(scores.values(), default=0)
    return tuple(path for path, score in scores.items() if score == best) if best else ()


def folder_notebooks(*folders: Path | None) -> tuple[Path, ...]:
    """The notebooks of ``folders`` (checkpoints left out), at most :data:`FOLDER_NOTEBOOKS` of each."""
    found: list[Path] = []
    for folder in folders:
        if folder is None:
            continue
        try:
            names = sorted(folder.glob("*.ipynb"))[:FOLDER_NOTEBOOKS]
        except OSError:
            continue
        found += [path.resolve() for path in names if path.is_file() and path.resolve() not in found]
    return tuple(found)


def kernel_id() -> str:
    """This kernel's id, from its connection file (``kernel-<id>.json``), else one made for this process."""
    args = sys.argv
    for index, arg in enumerate(args):
        value = args[index + 1] if arg == "-f" and index + 1 < len(args) else None
        if arg.startswith("--f="):
            value = arg[len("--f=") :]
        if value:
            stem = Path(value).stem
            return stem[len("kernel-") :] if stem.startswith("kernel-") else stem
    return _MADE_ID


_MADE_ID = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
