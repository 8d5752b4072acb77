"""Tapes a renamed notebook left behind: those of the same folder whose notebook file is gone."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bub_nb.tape.events import NOTEBOOK
from bub_nb.tape.locations import NotebookLocation
from bub_nb.tape.stores.protocol import TapeStore

FIRST_ENTRIES = 64
"""How far into a tape its ``notebook`` event is looked for: it follows the first cell that wrote."""


@dataclass(frozen=True, slots=True)
class LeftBehind:
    """A tape whose notebook was renamed or removed: its name, the notebook path it recorded, its size."""

    tape: str
    notebook: str
    entries: int


def left_behind(store: TapeStore, notebook: NotebookLocation) -> list[LeftBehind]:
    """The tapes of notebooks in ``notebook``'s folder whose notebook file no longer exists, largest first.

    A notebook's tape is named after its file, so a renamed notebook starts a new tape and its old tape
    is one of these: the one to continue with ``%tape use``.
    """
    folder = notebook.tape_name.split("__")[0] + "__"
    found = []
    for name in store.list_tapes():
        if not name.startswith(folder) or name == notebook.tape_name:
            continue
        path = _recorded_notebook(store, name)
        if path is not None and not Path(path).exists():
            found.append(LeftBehind(name, path, store.stats(name).entries))
    return sorted(found, key=lambda tape: -tape.entries)


def _recorded_notebook(store: TapeStore, name: str) -> str | None:
    for entry in store.read(name, 1, FIRST_ENTRIES + 1):
        data = entry.payload.get("data")
        if entry.kind == "event" and entry.name == NOTEBOOK and isinstance(data, dict):
            path = data.get("path")
            return path if isinstance(path, str) else None
    return None
