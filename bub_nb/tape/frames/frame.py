"""Entries as pandas DataFrames: one row per entry, and a ``df.tape`` accessor to slice them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from bub_nb.tape._lines import Record, gc_paused
from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.events import NOTEBOOK
from bub_nb.tape.frames.columns import (
    COLUMNS,
    flag_column,
    kind_column,
    missing_text,
    phase_column,
    phases_by_id,
    repeated_text,
    retracted_column,
    text_column,
)
from bub_nb.tape.frames.json_column import JsonDtype, json_column
from bub_nb.tape.stores.columns import FORKED_FROM, TAPE_NAME, Columns
from bub_nb.tape.stores.protocol import ReadsColumns

if TYPE_CHECKING:
    from bub_nb.tape.anchors import StoredTape


def entries_to_frame(entries: Iterable[TapeEntry], tape: StoredTape | None = None) -> pd.DataFrame:
    """One row per entry. ``phase`` is the phase anchor an entry falls under; token columns are
    filled from ``run`` and ``summary`` events, which carry the model's exact usage.

    With ``tape`` (the entries are some of its entries, as a query picks them) ``tape_name`` names it and
    each row's phase is read from the tape's anchors, so it is the phase the whole tape's frame gives."""
    entries = list(entries)
    with gc_paused():
        columns = Columns()
        columns.add(
            [e.id for e in entries],
            [e.kind for e in entries],
            [e.payload for e in entries],
            [e.meta for e in entries],
            [e.date for e in entries],
        )
    if tape is None:
        return columns_to_frame(columns)
    anchors = [(ref.id, ref.name) for ref in tape.store.anchors(tape.name)]
    frame = columns_to_frame(columns, names=tape.name, phases=phases_by_id(anchors, columns.ids))
    frame.attrs["tape"] = tape.name
    return frame


def records_to_frame(records: Sequence[Record], name: str | None = None) -> pd.DataFrame:
    """``entries_to_frame`` for decoded lines (``{id, kind, payload, meta, date}`` dicts)."""
    with gc_paused():
        columns = Columns.from_records(records)
    return columns_to_frame(columns, names=name)


def columns_to_frame(
    columns: Columns,
    tape_starts: Sequence[int] = (0,),
    names: str | list[str] | None = None,
    phases: tuple[list[str | None], list[int | None]] | None = None,
) -> pd.DataFrame:
    """``entries_to_frame`` for entries decoded straight into columns; with ``tape_starts`` (the first row
    of each tape) for the columns of several tapes, whose phases end with their tape, and ``names`` the
    tape of every row (or the one tape of them all). ``phases`` gives each row's phase name and anchor id
    when the rows are not a whole tape."""
    count = len(columns)
    kinds, text = columns.kinds, columns.text
    ids = np.array(columns.ids, dtype=np.int64)
    with gc_paused():  # a large tape makes millions of small objects that hold no cycles
        if phases is None:
            phase_names, anchor_rows = phase_column(kinds, text.own_names, tape_starts)
            phase_ids = pd.arrays.IntegerArray(ids[np.maximum(anchor_rows, 0)], anchor_rows < 0)
        else:
            phase_names = phases[0]
            phase_ids = pd.array(phases[1], dtype="Int64")
        if isinstance(names, str):
            tape_names = repeated_text(names, count)
        else:
            tape_names = text_column([names] * count if names is None else names, text_or_none=True)
        frame = pd.DataFrame(
            {
                TAPE_NAME: tape_names,
                "id": pd.Series(ids),
                "kind": kind_column(kinds),
                "date": frame_dates(columns.dates),
                "role": text_column(text.roles, text_or_none=True),
                "name": text_column(text.names, text_or_none=True),
                "content": text_column(text.contents, text_or_none=True),
                "tools": text.tools,
                "phase": text_column(phase_names, text_or_none=True),
                "phase_id": phase_ids,
                "run_id": text_column(columns.run_ids, text_or_none=columns.run_ids_are_text),
                FORKED_FROM: _sparse_text(columns.forked_from, count),
                "prompt_tokens": _token_counts(text.prompt_tokens, count),
                "completion_tokens": _token_counts(text.completion_tokens, count),
                "retracted": retracted_column(ids, columns.kinds, text.own_names, columns.payloads, tape_starts),
                "bad_bytes": flag_column(columns.bad_rows, count),
                "payload": json_column(columns.payloads),
                "meta": json_column(columns.metas),
            },
            columns=list(COLUMNS),
            copy=False,  # every column was built here for this frame alone: no need to copy it again
        )
    return frame if count else _empty(frame)


def frame_dates(dates: list[str]) -> pd.Series:
    """The ``date`` column: UTC to the microsecond, whatever precision the dates are written with (pandas would
    pick the unit from the text, so two tapes' frames would differ), a missing or unreadable date missing."""
    moments = pd.to_datetime(pd.Series(dates, dtype="object"), utc=True, format="ISO8601", errors="coerce")
    return moments.dt.as_unit("us")


def _empty(frame: pd.DataFrame) -> pd.DataFrame:
    """A frame of no rows with the dtypes a frame of rows has (text ``str``, ``kind`` categorical)."""
    text = pd.StringDtype(na_value=np.nan)
    dtypes = {column: text for column in (TAPE_NAME, "role", "name", "content", "phase", "run_id", FORKED_FROM)}
    frame = frame.astype({**dtypes, "tools": object, "payload": JsonDtype(), "meta": JsonDtype()})
    frame["kind"] = pd.Categorical([], categories=pd.Index([], dtype=text))
    frame["date"] = frame["date"].astype("datetime64[us, UTC]")
    return frame


def _sparse_text(values: dict[int, Any], count: int) -> pd.Series | list[Any]:
    """A text column set on a few rows (``row -> value``), missing elsewhere: ``str`` even when no row is."""
    if not values:
        return missing_text(count)
    column: list[Any] = [None] * count
    for row, value in values.items():
        column[row] = value
    return text_column(column, text_or_none=all(type(value) is str for value in values.values()))


def text_series(values: list[str | None]) -> pd.Series:
    """Strings or ``None`` as a column of pandas' ``str`` dtype, even when every value is ``None`` (a column of
    text that some tapes leave empty has one dtype in every frame)."""
    column = text_column(values, text_or_none=True)
    if isinstance(column, pd.Series):
        return column
    return pd.Series(values, dtype=pd.StringDtype(na_value=np.nan))


def _token_counts(counts: dict[int, int], count: int) -> pd.api.extensions.ExtensionArray:
    """One nullable integer per row: the count a ``run`` or ``summary`` event reports, else missing."""
    rows = np.fromiter(counts, dtype=np.intp, count=len(counts))
    values = np.zeros(count, dtype="int64")
    missing = np.ones(count, dtype=bool)
    values[rows] = np.fromiter(counts.values(), dtype=np.int64, count=len(counts))
    missing[rows] = False
    return pd.arrays.IntegerArray(values, missing)


def tape_to_frame(tape: StoredTape) -> pd.DataFrame:
    """The whole tape as a frame; a store that can hand over decoded lines skips building entries."""
    store = tape.store
    from bub_nb.tape.frames.native import native_table

    table = native_table(store, [tape.name], for_frame=True)
    if table is not None:
        from bub_nb.tape.frames.native import table_to_frame

        frame = table_to_frame(table)
        frame.attrs["tape"] = tape.name
        return frame
    with gc_paused():  # from the first decoded line to the last column: millions of objects, no cycles
        if isinstance(store, ReadsColumns):
            frame = columns_to_frame(store.columns(tape.name), names=tape.name)
        else:
            frame = entries_to_frame(store.read(tape.name))
            frame[TAPE_NAME] = repeated_text(tape.name, len(frame))
    frame.attrs["tape"] = tape.name
    return frame


def notebook_of(frame: pd.DataFrame) -> str | None:
    """The notebook path the newest ``notebook`` event of a tape's frame records, if any."""
    paths = notebook_paths(frame)
    return paths[-1] if paths else None


def notebook_paths(frame: pd.DataFrame) -> list[str]:
    """The notebook paths the ``notebook`` events of a frame record, oldest first."""
    events = frame[(frame["kind"] == "event") & (frame["name"] == NOTEBOOK)]
    paths = []
    for payload in events["payload"].tolist():
        data = payload.get("data")
        path = data.get("path") if isinstance(data, dict) else None
        if isinstance(path, str):
            paths.append(path)
    return paths


def tape_notebooks(frame: pd.DataFrame) -> dict[str, str]:
    """Each tape's notebook in a frame of several: the path its newest ``notebook`` event records."""
    events = frame[(frame["kind"] == "event") & (frame["name"] == NOTEBOOK)]
    notebooks: dict[str, str] = {}
    for tape, part in events.groupby(TAPE_NAME, sort=False):
        paths = notebook_paths(part)
        if paths:
            notebooks[str(tape)] = paths[-1]
    return notebooks


def with_tape_columns(frame: pd.DataFrame, *, archived: bool | None = None) -> pd.DataFrame:
    """One tape's frame as a part of a frame of several: the entry columns, then ``notebook`` (the notebook
    that wrote the tape) and, when archives are asked for, ``archived``."""
    frame["notebook"] = text_series([notebook_of(frame)] * len(frame))
    if archived is not None:
        frame["archived"] = archived
    return frame


from bub_nb.tape.frames.accessor import TapeAccessor, frame_to_entries  # noqa: E402  registers df.tape

__all__ = [
    "COLUMNS",
    "TAPE_NAME",
    "TapeAccessor",
    "entries_to_frame",
    "frame_to_entries",
    "records_to_frame",
    "tape_to_frame",
]
