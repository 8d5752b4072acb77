"""Every tape of a Bub home, or of a store, in one DataFrame."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from bub_nb.errors import TapeError
from bub_nb.tape._lines import gc_paused
from bub_nb.tape.anchors import NamedTape
from bub_nb.tape.events import NOTEBOOK
from bub_nb.tape.frames.frame import columns_to_frame, notebook_paths, tape_to_frame, with_tape_columns
from bub_nb.tape.frames.overview import store_frame
from bub_nb.tape.locations import bub_home, tapes_home
from bub_nb.tape.stores.archive import ArchiveTapeStore, archive_files
from bub_nb.tape.stores.columns import TAPE_NAME, Columns
from bub_nb.tape.stores.resolve import file_store


def read_tapes(home: str | Path | None = None, *, include_archives: bool = False, store: Any = None) -> pd.DataFrame:
    """Every tape under ``<home>/tapes`` in one frame, with a ``tape_name`` column first.

    ``home`` is a Bub home (or its ``tapes`` folder itself); one that does not exist is an error.
    With ``include_archives`` the ``.bak`` files a reset left are read too, marked in ``archived``.
    The tapes' lines are decoded into one set of columns and framed once (phases end with their tape),
    which costs about what one tape of the same size does.
    With ``store`` (a store or a ``postgresql://`` DSN) the tapes come from there instead, with an
    ``owner`` column after ``tape_name``.
    """
    if store is not None:
        return store_frame(store)
    root = bub_home(home)
    if not root.is_dir():
        raise TapeError(f"Bub home {str(root)!r} is not a folder, so it holds no tapes")
    folder = tapes_home(home)
    if not folder.is_dir() and any(root.glob("*.jsonl")):
        folder = root  # the tapes folder itself was given
    store = file_store(folder)
    columns, names, starts = Columns(), [], []
    with gc_paused():
        for name in store.list_tapes():  # every file Bub would list, even one whose name we would not give
            starts.append(len(columns))
            store.columns(name, into=columns)
            names += [name] * (len(columns) - starts[-1])
        frame = columns_to_frame(columns, starts, names=names)
    if not names:
        frame["kind"] = frame["kind"].astype("category")  # categorical even with no rows, as analysts expect
    frame["notebook"] = _notebook_column(frame)
    if not include_archives:
        return frame
    frame["archived"] = False
    archives = [NamedTape(path.name, ArchiveTapeStore(path, store)) for path in archive_files(folder)]
    parts = [with_tape_columns(tape_to_frame(tape), archived=True) for tape in archives]
    if not parts:
        return frame
    frame = pd.concat([frame, *parts], ignore_index=True)
    frame["kind"] = frame["kind"].astype("category")  # categories differ per part; concat drops them
    return frame


def _notebook_column(frame: pd.DataFrame) -> list[str | None]:
    """Each row's tape's notebook: the newest ``notebook`` event of that tape, else ``None``."""
    events = frame[(frame["kind"] == "event") & (frame["name"] == NOTEBOOK)]
    notebooks: dict[str, str] = {}
    for tape, part in events.groupby(TAPE_NAME, sort=False):
        paths = notebook_paths(part)
        if paths:
            notebooks[str(tape)] = paths[-1]
    if not notebooks:
        return [None] * len(frame)
    return [notebooks.get(name) for name in frame[TAPE_NAME].tolist()]
