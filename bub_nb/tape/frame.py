"""Tapes as pandas DataFrames: one row per entry, and a ``df.tape`` accessor to slice them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from bub_nb.tape.entries import TapeEntry, is_phase_anchor
from bub_nb.tape.lines import Record, gc_paused
from bub_nb.tape.naming import NOTEBOOK_EVENT, bub_home, tapes_home
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


def notebook_of(frame: pd.DataFrame) -> str | None:
    """The notebook path the newest ``notebook`` event of a tape's frame records, if any."""
    events = frame[(frame["kind"] == "event") & (frame["name"] == NOTEBOOK_EVENT)]
    for payload in reversed(events["payload"].tolist()):
        data = payload.get("data")
        path = data.get("path") if isinstance(data, dict) else None
        if isinstance(path, str):
            return path
    return None


def with_tape_columns(frame: pd.DataFrame, name: str, *, archived: bool | None = None) -> pd.DataFrame:
    """One tape's frame as a part of a frame of several: ``tape_name`` first, then the entry columns,
    ``notebook`` (the notebook that wrote the tape) and, when archives are asked for, ``archived``."""
    frame.insert(0, TAPE_NAME, name)
    frame["notebook"] = notebook_of(frame)
    if archived is not None:
        frame["archived"] = archived
    return frame


def read_tapes(home: str | Path | None = None, *, include_archives: bool = False, store: Any = None) -> pd.DataFrame:
    """Every tape under ``<home>/tapes`` in one frame, with a ``tape_name`` column first.

    ``home`` is a Bub home (or its ``tapes`` folder itself); one that does not exist is an error.
    With ``include_archives`` the ``.bak`` files a reset left are read too, marked in ``archived``.
    With ``store`` (a store or a ``postgresql://`` DSN) the tapes come from there instead, with an
    ``owner`` column after ``tape_name``.
    """
    if store is not None:
        from bub_nb.tape.overview import store_frame

        return store_frame(store)
    from bub_nb.errors import TapeError
    from bub_nb.tape.archive import archive_files, open_archive
    from bub_nb.tape.open import file_store
    from bub_nb.tape.service import Tape

    root = bub_home(home)
    if not root.is_dir():
        raise TapeError(f"Bub home {str(root)!r} is not a folder, so it holds no tapes")
    folder = tapes_home(home)
    if not folder.is_dir() and any(root.glob("*.jsonl")):
        folder = root  # the tapes folder itself was given
    store = file_store(folder)
    archived = False if include_archives else None
    frames = [
        with_tape_columns(tape_to_frame(Tape(name, store)), name, archived=archived)
        for name in store.list_tapes()  # every file Bub would list, even one whose name we would not give
    ]
    if include_archives:
        for path in archive_files(folder):
            tape = open_archive(path, store)
            frames.append(with_tape_columns(tape_to_frame(tape), tape.name, archived=True))
    if not frames:
        return with_tape_columns(entries_to_frame([]), "", archived=archived).astype({"kind": "category"})
    frame = pd.concat(frames, ignore_index=True)
    frame["kind"] = frame["kind"].astype("category")  # categories differ per tape; concat drops them
    return frame


from bub_nb.tape.accessor import TAPE_NAME, TapeAccessor, frame_to_entries  # noqa: E402  registers df.tape

__all__ = [
    "COLUMNS",
    "TAPE_NAME",
    "TapeAccessor",
    "entries_to_frame",
    "frame_to_entries",
    "read_tapes",
    "records_to_frame",
    "tape_to_frame",
]
