"""Tapes as pandas DataFrames: one row per entry, and a ``df.tape`` accessor to slice them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from bub_nb.tape import extensions
from bub_nb.tape.entries import TapeEntry, is_phase_anchor
from bub_nb.tape.naming import tapes_home
from bub_nb.tape.text import call_names, entry_role, entry_text

if TYPE_CHECKING:
    from bub_nb.tape.service import Tape

COLUMNS = (
    "id", "kind", "date", "role", "name", "content", "tools", "phase", "run_id",
    "prompt_tokens", "completion_tokens", "payload", "meta",
)  # fmt: skip


def entries_to_frame(entries: Iterable[TapeEntry]) -> pd.DataFrame:
    """One row per entry. ``phase`` is the phase anchor an entry falls under; token columns are
    filled from ``run`` events, which carry the model's exact usage."""
    ids, kinds, dates, roles, names, contents, tools, phases, run_ids = ([] for _ in range(9))
    prompt_tokens: list[Any] = []
    completion_tokens: list[Any] = []
    payloads, metas = [], []
    phase = None
    for entry in entries:
        kind, payload, meta = entry.kind, entry.payload, entry.meta
        name = entry.name
        if kind == "anchor" and is_phase_anchor(name):
            phase = name
        usage = (payload.get("data") or {}).get("usage") if kind == "event" and name == "run" else None
        calls = call_names(entry) if kind in ("tool_call", "message") else []
        if kind == "message" and not name:
            name = payload.get("name") if isinstance(payload.get("name"), str) else None
        ids.append(entry.id)
        kinds.append(kind)
        dates.append(entry.date)
        roles.append(entry_role(entry))
        names.append(name if name is not None else (calls[0] if len(calls) == 1 else None))
        contents.append(entry_text(entry))
        tools.append(calls)
        phases.append(phase)
        run_ids.append(meta.get("run_id"))
        prompt_tokens.append(usage.get("prompt_tokens") if isinstance(usage, dict) else None)
        completion_tokens.append(usage.get("completion_tokens") if isinstance(usage, dict) else None)
        payloads.append(payload)
        metas.append(meta)
    frame = pd.DataFrame(
        {
            "id": pd.Series(ids, dtype="int64"),
            "kind": pd.Series(kinds, dtype="category") if kinds else pd.Series(kinds, dtype="object"),
            "date": pd.to_datetime(pd.Series(dates, dtype="object"), utc=True, format="ISO8601"),
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
    return frame


def tape_to_frame(tape: Tape) -> pd.DataFrame:
    frame = entries_to_frame(tape.read())
    frame.attrs["tape"] = tape.name
    return frame


def read_tapes(home: str | Path | None = None) -> pd.DataFrame:
    """Every tape under ``<home>/tapes`` in one frame, with a ``tape`` column first."""
    from bub_nb.tape.open import file_store, open_tape

    store = file_store(tapes_home(home))
    frames = []
    for name in store.list_tapes():
        frame = tape_to_frame(open_tape(name, store=store))
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
