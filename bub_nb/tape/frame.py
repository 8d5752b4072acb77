"""Tapes as pandas DataFrames: one row per entry, and a ``df.tape`` accessor to slice them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from bub_nb.tape import extensions
from bub_nb.tape.entries import TapeEntry, is_phase_anchor
from bub_nb.tape.lines import Record, gc_paused
from bub_nb.tape.naming import tapes_home
from bub_nb.tape.text import payload_call_names, payload_text

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


_NAMED_KINDS = frozenset(("anchor", "event", "message"))
_FIXED_ROLES = {"system": "system", "tool_call": "assistant", "anchor": "assistant", "tool_result": "tool"}


def _frame(
    ids: list[int], kinds: list[str], payloads: list[dict[str, Any]], metas: list[dict[str, Any]], dates: list[str]
) -> pd.DataFrame:
    count = len(ids)
    # Whole-column comprehensions rather than one loop with many appends, each with the common
    # shape inline (a plain chat message) and the text module for everything else: same values,
    # a fraction of the function calls.
    with gc_paused():  # a large tape makes millions of small objects that hold no cycles
        pairs = list(zip(kinds, payloads, strict=True))
        plain = [k == "message" and "tool_calls" not in p for k, p in pairs]
        tools = [
            [] if is_plain or (k != "tool_call" and k != "message") else payload_call_names(k, p)
            for is_plain, (k, p) in zip(plain, pairs, strict=True)
        ]
        own_names = [
            (name if isinstance(name := p.get("name"), str) else None) if k in _NAMED_KINDS else None for k, p in pairs
        ]
        names = [n if n is not None else (c[0] if len(c) == 1 else None) for n, c in zip(own_names, tools, strict=True)]
        roles = [
            (role if isinstance(role := p.get("role"), str) else None) if k == "message" else _FIXED_ROLES.get(k)
            for k, p in pairs
        ]
        contents = [
            text if is_plain and isinstance(text := p.get("content"), str) else payload_text(k, p)
            for is_plain, (k, p) in zip(plain, pairs, strict=True)
        ]
        run_ids = [meta.get("run_id") for meta in metas]
        phases: list[str | None] = [None] * count
        starts = [row for row, kind in enumerate(kinds) if kind == "anchor" and is_phase_anchor(own_names[row])]
        for row, end in zip(starts, [*starts[1:], count] if starts else [], strict=True):
            phases[row:end] = [own_names[row]] * (end - row)
        prompt_tokens: list[Any] = [None] * count
        completion_tokens: list[Any] = [None] * count
        for row, kind in enumerate(kinds):
            if kind == "event" and own_names[row] == "run":
                data = payloads[row].get("data")
                usage = data.get("usage") if isinstance(data, dict) else None
                if isinstance(usage, dict):
                    prompt_tokens[row] = usage.get("prompt_tokens")
                    completion_tokens[row] = usage.get("completion_tokens")
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
            "prompt_tokens": pd.array(prompt_tokens, dtype="Int64"),
            "completion_tokens": pd.array(completion_tokens, dtype="Int64"),
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


def read_tapes(home: str | Path | None = None) -> pd.DataFrame:
    """Every tape under ``<home>/tapes`` in one frame, with a ``tape`` column first."""
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
