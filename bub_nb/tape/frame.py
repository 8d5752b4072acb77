"""Tapes as pandas DataFrames: one row per entry, and a ``df.tape`` accessor to slice them."""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from bub_nb.tape import extensions
from bub_nb.tape.columns import TAPE_COLUMN, Columns, kind_column, phase_column, text_columns
from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.lines import Record, gc_paused
from bub_nb.tape.naming import tapes_home

if TYPE_CHECKING:
    from bub_nb.tape.service import Tape

COLUMNS = (
    "id", "kind", "date", "role", "name", "content", "tools", "phase", "run_id",
    "prompt_tokens", "completion_tokens", "payload", "meta",
)  # fmt: skip


def entries_to_frame(entries: Iterable[TapeEntry]) -> pd.DataFrame:
    """One row per entry. ``phase`` is the phase anchor an entry falls under; token columns are
    filled from ``run`` events, which carry the model's exact usage."""
    entries = list(entries)
    return _frame(
        [e.id for e in entries],
        [e.kind for e in entries],
        [e.payload for e in entries],
        [e.meta for e in entries],
        [e.date for e in entries],
    )


def records_to_frame(records: Sequence[Record]) -> pd.DataFrame:
    """``entries_to_frame`` for decoded lines (``{id, kind, payload, meta, date}`` dicts)."""
    return _frame(
        [r["id"] for r in records],
        [r["kind"] for r in records],
        [r["payload"] for r in records],
        [r["meta"] for r in records],
        [r["date"] for r in records],
    )


_RUN_ID = operator.methodcaller("get", "run_id")


def columns_to_frame(columns: Columns) -> pd.DataFrame:
    """``entries_to_frame`` for entries decoded straight into columns."""
    return _frame(columns.ids, columns.kinds, columns.payloads, columns.metas, columns.dates)


def _token_counts(usages: dict[int, Any], key: str, count: int) -> pd.api.extensions.ExtensionArray:
    """One nullable integer per row: the count a ``run`` event reports, else missing."""
    rows, counts = [], []
    for row, usage in usages.items():
        value = usage.get(key)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if type(value) is int and -(2**63) <= value < 2**63:  # anything else is not a count
            rows.append(row)
            counts.append(value)
    values = np.zeros(count, dtype="int64")
    missing = np.ones(count, dtype=bool)
    values[rows] = counts
    missing[rows] = False
    return pd.arrays.IntegerArray(values, missing)


def _frame(
    ids: list[int],
    kinds: list[str],
    payloads: list[dict[str, Any]],
    metas: list[dict[str, Any]],
    dates: list[str],
    tape_starts: Sequence[int] = (0,),
) -> pd.DataFrame:
    count = len(ids)
    with gc_paused():  # a large tape makes millions of small objects that hold no cycles
        text = text_columns(kinds, payloads)
        roles, own_names, names, contents, tools = text.roles, text.own_names, text.names, text.contents, text.tools
        run_ids = list(map(_RUN_ID, metas))
        phases = phase_column(kinds, own_names, tape_starts)
        usages = text.usages
        return pd.DataFrame(
            {
                "id": pd.Series(ids, dtype="int64"),
                "kind": kind_column(kinds),
                "date": pd.to_datetime(pd.Series(dates, dtype="object"), utc=True, format="ISO8601", errors="coerce"),
                "role": roles,
                "name": names,
                "content": contents,
                "tools": tools,
                "phase": phases,
                "run_id": run_ids,
                "prompt_tokens": _token_counts(usages, "prompt_tokens", count),
                "completion_tokens": _token_counts(usages, "completion_tokens", count),
                "payload": payloads,
                "meta": metas,
            },
            columns=list(COLUMNS),
        )


def tape_to_frame(tape: Tape) -> pd.DataFrame:
    """The whole tape as a frame; a store that can hand over decoded lines skips building entries."""
    columns = getattr(tape.store, "columns", None)
    with gc_paused():  # from the first decoded line to the last column: millions of objects, no cycles
        frame = columns_to_frame(columns(tape.name)) if columns is not None else entries_to_frame(tape.read())
    frame.attrs["tape"] = tape.name
    return frame


def read_tapes(home: str | Path | None = None) -> pd.DataFrame:
    """Every tape under ``<home>/tapes`` in one frame, with a ``tape`` column first.

    The tapes' lines are decoded into one set of columns and framed once (phases end with their tape),
    which costs about what one tape of the same size does.
    """
    from bub_nb.tape.open import file_store

    store = file_store(tapes_home(home))
    columns, names, starts = Columns(), [], []
    with gc_paused():
        for name in store.list_tapes():  # every file Bub would list, even one whose name we would not give
            starts.append(len(columns))
            columns.extend(store.columns(name))
            names += [name] * (len(columns) - starts[-1])
        frame = _frame(columns.ids, columns.kinds, columns.payloads, columns.metas, columns.dates, starts)
    frame.insert(0, TAPE_COLUMN, names or pd.Series(names, dtype="object"))
    return frame


def frame_to_entries(frame: pd.DataFrame) -> list[TapeEntry]:
    """Rows back into entries (from the raw ``payload`` and ``meta`` columns)."""
    return [
        TapeEntry(int(i), str(k), p, m, d.isoformat() if hasattr(d, "isoformat") else str(d))
        for i, k, p, m, d in zip(
            frame["id"], frame["kind"], frame["payload"], frame["meta"], frame["date"], strict=True
        )
    ]


@pd.api.extensions.register_dataframe_accessor("tape")
class TapeAccessor:
    """``df.tape``: slice a tape frame between anchors and turn rows back into chat messages."""

    def __init__(self, frame: pd.DataFrame) -> None:
        missing = {"id", "kind", "payload"} - set(frame.columns)
        if missing:
            raise AttributeError(f"df.tape needs a frame from Tape.to_frame(); missing columns: {sorted(missing)}")
        self._frame = frame

    def _anchor_id(self, name: str) -> int:
        from bub_nb.errors import AnchorNotFoundError

        frame = self._frame
        anchors = frame[frame["kind"] == "anchor"]
        hits = anchors[anchors["name"] == name]
        if hits.empty:
            raise AnchorNotFoundError(name, [str(n) for n in anchors["name"]])
        return int(hits["id"].iloc[-1])

    def after(self, name: str) -> pd.DataFrame:
        """Rows after the last anchor called ``name``."""
        return self._frame[self._frame["id"] > self._anchor_id(name)]

    def between(self, start: str, end: str) -> pd.DataFrame:
        """Rows after the last ``start`` anchor and before the last ``end`` anchor."""
        first, last = self._anchor_id(start), self._anchor_id(end)
        ids = self._frame["id"]
        return self._frame[(ids > first) & (ids < last)]

    def phase(self, name: str) -> pd.DataFrame:
        """Rows that fall under every phase anchor called ``name``, the anchors included."""
        return self._frame[self._frame["phase"] == name]

    def kinds(self, *kinds: str) -> pd.DataFrame:
        return self._frame[self._frame["kind"].isin(kinds)]

    def entries(self) -> list[TapeEntry]:
        return frame_to_entries(self._frame)

    def to_messages(self) -> list[dict[str, Any]]:
        """The rows as OpenAI chat messages, by the same rules as a view."""
        return extensions.require("messages")(self.entries())

    def anchors(self) -> pd.DataFrame:
        return self._frame[self._frame["kind"] == "anchor"][["id", "date", "name", "payload"]]

    def summary(self, by: Sequence[str] = ("phase", "kind")) -> pd.DataFrame:
        """Entry counts per phase and kind, a quick picture of a session."""
        return self._frame.groupby(list(by), observed=True, sort=False).size().unstack(fill_value=0)
