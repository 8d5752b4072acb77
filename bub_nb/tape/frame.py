"""Tapes as pandas DataFrames: one row per entry, and a ``df.tape`` accessor to slice them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from bub_nb.tape import extensions
from bub_nb.tape.entries import TapeEntry, is_phase_anchor
from bub_nb.tape.lines import Record, gc_paused
from bub_nb.tape.naming import tapes_home
from bub_nb.tape.text import payload_call_names, payload_text, tool_call_text

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


Row = tuple[str | None, str | None, str, list[str]]  # role, own name, content, tool names
_FIXED_ROLES = {"system": "system", "tool_call": "assistant", "anchor": "assistant", "tool_result": "tool"}


def _message_row(kind: str, payload: dict[str, Any]) -> Row:
    role, name, content = payload.get("role"), payload.get("name"), payload.get("content")
    role = role if isinstance(role, str) else None
    name = name if isinstance(name, str) else None
    if "tool_calls" not in payload and isinstance(content, str):  # a plain chat message, most rows
        return role, name, content, []
    return role, name, payload_text(kind, payload), payload_call_names(kind, payload)


def _named_row(kind: str, payload: dict[str, Any]) -> Row:
    name = payload.get("name")
    return _FIXED_ROLES.get(kind), name if isinstance(name, str) else None, payload_text(kind, payload), []


def _tool_call_row(kind: str, payload: dict[str, Any]) -> Row:
    text, names = tool_call_text(payload)
    return "assistant", None, text, names


def _other_row(kind: str, payload: dict[str, Any]) -> Row:
    return _FIXED_ROLES.get(kind), None, payload_text(kind, payload), []


_ROWS = {"message": _message_row, "anchor": _named_row, "event": _named_row, "tool_call": _tool_call_row}


def _frame(
    ids: list[int], kinds: list[str], payloads: list[dict[str, Any]], metas: list[dict[str, Any]], dates: list[str]
) -> pd.DataFrame:
    count = len(ids)
    # One call per row through a table of row builders: a plain chat message (most rows) is read
    # inline, everything else through the text module.
    with gc_paused():  # a large tape makes millions of small objects that hold no cycles
        rows = [_ROWS.get(kind, _other_row)(kind, payload) for kind, payload in zip(kinds, payloads, strict=True)]
        # (Not zip(*rows): unpacking a hundred thousand rows as arguments is far slower.)
        roles = [row[0] for row in rows]
        own_names = [row[1] for row in rows]
        contents = [row[2] for row in rows]
        tools = [row[3] for row in rows]
        names = [n if n is not None else (c[0] if len(c) == 1 else None) for n, c in zip(own_names, tools, strict=True)]
        run_ids = [meta.get("run_id") for meta in metas]
        phases: list[str | None] = [None] * count
        starts = [row for row, kind in enumerate(kinds) if kind == "anchor" and is_phase_anchor(own_names[row])]
        for row, end in zip(starts, [*starts[1:], count] if starts else [], strict=True):
            phases[row:end] = [own_names[row]] * (end - row)
        usages = {}
        for row, kind in enumerate(kinds):
            if kind == "event" and own_names[row] == "run":
                data = payloads[row].get("data")
                usage = data.get("usage") if isinstance(data, dict) else None
                if isinstance(usage, dict):
                    usages[row] = usage
        return pd.DataFrame(
            {
                "id": pd.Series(ids, dtype="int64"),
                "kind": pd.Series(kinds, dtype="category") if kinds else pd.Series(kinds, dtype="object"),
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
    records = getattr(tape.store, "records", None)
    frame = records_to_frame(records(tape.name)) if records is not None else entries_to_frame(tape.read())
    frame.attrs["tape"] = tape.name
    return frame


def read_tapes(home: str | Path | None = None, *, store: Any = None) -> pd.DataFrame:
    """Every tape under ``<home>/tapes`` in one frame, with a ``tape`` column first.

    With ``store`` (a store or a ``postgresql://`` DSN) the tapes come from there, with ``owner``
    and ``notebook`` columns after ``tape``.
    """
    if store is not None:
        from bub_nb.tape.overview import store_frame

        return store_frame(store)
    from bub_nb.tape.open import file_store
    from bub_nb.tape.service import Tape

    store = file_store(tapes_home(home))
    frames = []
    for name in store.list_tapes():  # every file Bub would list, even one whose name we would not give
        frame = tape_to_frame(Tape(name, store))
        frame.insert(0, "tape", name)
        frames.append(frame)
    if not frames:
        return entries_to_frame([]).assign(tape=pd.Series(dtype="object"))[["tape", *COLUMNS]]
    return pd.concat(frames, ignore_index=True)


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
