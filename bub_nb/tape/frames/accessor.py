"""``df.tape``: slice tape frames between anchors, per tape, with the Tape API's rules and errors."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bub_nb.errors import AnchorNotFoundError, TapeError
from bub_nb.tape import seams
from bub_nb.tape.anchors import anchor_order_error, check_kinds
from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.stores.columns import TAPE_NAME


def frame_to_entries(frame: pd.DataFrame) -> list[TapeEntry]:
    """Rows back into entries (from the raw ``payload`` and ``meta`` columns)."""
    return [
        TapeEntry(int(i), str(k), p, m, d.isoformat() if hasattr(d, "isoformat") else str(d))
        for i, k, p, m, d in zip(
            frame["id"], frame["kind"], frame["payload"], frame["meta"], frame["date"], strict=True
        )
    ]


class _Part:
    """The rows of one tape inside a frame: their positions in the frame, ids, and anchors."""

    def __init__(self, name: str, positions: np.ndarray, ids: np.ndarray, anchors: np.ndarray, names: np.ndarray):
        self.name, self.positions, self.ids = name, positions, ids[positions]
        at = positions[anchors[positions]]
        order = np.argsort(ids[at], kind="stable")
        named = [
            (int(i), n) for i, n in zip(ids[at][order].tolist(), names[at][order], strict=True) if isinstance(n, str)
        ]
        self.anchor_names = [n for _, n in named]
        self._anchor_ids = {n: i for i, n in named}  # in id order, so the last occurrence wins, as on the tape
        self._every: dict[str, list[int]] = {}
        for i, n in named:
            self._every.setdefault(n, []).append(i)

    def anchor_id(self, name: str) -> int | None:
        """The id of the last anchor called ``name``, the one the Tape API means by the name."""
        return self._anchor_ids.get(name)

    def anchor_ids(self, name: str) -> list[int]:
        """The ids of every anchor called ``name``, oldest first."""
        return self._every.get(name, [])


def _missing(helper: str, frame: pd.DataFrame, missing: set[str]) -> str:
    """Why a frame lacks what ``helper`` reads, and the likely cure."""
    moved = [name for name in sorted(missing) if name in frame.index.names]
    cure = f"; {moved} is the index: call reset_index() first" if moved else ""
    return f"{helper} needs the columns of Tape.to_frame(); missing: {sorted(missing)}{cure}"


@pd.api.extensions.register_dataframe_accessor("tape")
class TapeAccessor:
    """``df.tape``: slice a tape frame between anchors and turn rows back into chat messages.

    On a frame of several tapes (``read_tapes()``, with a ``tape_name`` column) every helper works
    tape by tape: an anchor is looked up inside each tape, and a tape that lacks it gives no rows.
    Bad input raises what the Tape API raises for it.
    """

    def __init__(self, frame: pd.DataFrame) -> None:
        missing = {"id", "kind"} - set(frame.columns)
        if missing:
            raise AttributeError(_missing("df.tape", frame, missing))
        self._frame = frame

    def _need(self, helper: str, *columns: str) -> None:
        missing = set(columns) - set(self._frame.columns)
        if missing:
            raise TapeError(_missing(f"df.tape.{helper}()", self._frame, missing))

    # -- tapes inside the frame -------------------------------------------------------------------

    def _parts(self) -> list[_Part]:
        frame = self._frame
        ids = frame["id"].to_numpy()
        anchors = (frame["kind"] == "anchor").to_numpy(dtype=bool)
        names = frame["name"].to_numpy(dtype=object) if "name" in frame.columns else np.full(len(frame), None)
        if TAPE_NAME not in frame.columns:
            name = frame.attrs.get("tape", "this frame")
            return [_Part(str(name), np.arange(len(frame)), ids, anchors, names)]
        keys = [TAPE_NAME, "archived"] if "archived" in frame.columns else TAPE_NAME
        groups = frame.groupby(keys, sort=False, dropna=False, observed=True).indices
        return [_Part(str(_tape(name)), positions, ids, anchors, names) for name, positions in groups.items()]

    def _rows(self, keep: np.ndarray) -> pd.DataFrame:
        return self._frame.iloc[np.flatnonzero(keep)]

    def _known(self, parts: Sequence[_Part]) -> list[str]:
        return [name for part in parts for name in part.anchor_names]

    def _single(self, helper: str) -> None:
        if TAPE_NAME in self._frame.columns and self._frame[TAPE_NAME].nunique(dropna=False) > 1:
            tapes = ", ".join(map(str, self._frame[TAPE_NAME].unique()))
            raise TapeError(
                f"df.tape.{helper}() needs the rows of one tape, but this frame holds several: {tapes}; "
                f"pick one with df[df.tape_name == NAME]"
            )

    # -- slicing ----------------------------------------------------------------------------------

    def after(self, name: str) -> pd.DataFrame:
        """Rows after the last anchor called ``name``, in each tape that has it."""
        parts = self._parts()
        keep = np.zeros(len(self._frame), dtype=bool)
        found = False
        for part in parts:
            anchor = part.anchor_id(name)
            if anchor is not None:
                found = True
                keep[part.positions[part.ids > anchor]] = True
        if not found:
            raise AnchorNotFoundError(name, self._known(parts))
        return self._rows(keep)

    def between(self, start: str, end: str) -> pd.DataFrame:
        """Rows after the last ``start`` anchor and before the last ``end`` anchor, in each tape with both."""
        parts = self._parts()
        keep = np.zeros(len(self._frame), dtype=bool)
        with_start = [part for part in parts if part.anchor_id(start) is not None]
        if not with_start:
            raise AnchorNotFoundError(start, self._known(parts))
        with_both = [part for part in with_start if part.anchor_id(end) is not None]
        if not with_both:
            raise AnchorNotFoundError(end, self._known(with_start))
        for part in with_both:
            first, last = part.anchor_id(start), part.anchor_id(end)
            assert first is not None and last is not None
            if last <= first:
                raise anchor_order_error(start, first, end, last, part.name)
            keep[part.positions[(part.ids > first) & (part.ids < last)]] = True
        return self._rows(keep)

    def phase(self, name: str, occurrence: int | None = -1) -> pd.DataFrame:
        """Rows of one phase called ``name``, its anchor included, in each tape that has it.

        Names repeat (every overflow writes ``auto_handoff/context_overflow``); a phase is its anchor.
        ``occurrence`` picks which: ``-1`` (the default) the last, as ``after()`` does, ``0`` the first,
        ``1`` the second, and ``None`` every phase of that name."""
        parts = self._parts()
        if not any(part.anchor_id(name) is not None for part in parts):
            raise AnchorNotFoundError(name, self._known(parts))
        named = (self._frame["phase"] == name).to_numpy(dtype=bool, na_value=False)
        if occurrence is None or "phase_id" not in self._frame.columns:
            return self._rows(named)
        phase_ids = self._frame["phase_id"].to_numpy(dtype="float64", na_value=np.nan)
        keep = np.zeros(len(self._frame), dtype=bool)
        for part in parts:
            ids = part.anchor_ids(name)
            if -len(ids) <= occurrence < len(ids):
                keep[part.positions] = phase_ids[part.positions] == ids[occurrence]
        return self._rows(keep & named)

    def kinds(self, *kinds: str) -> pd.DataFrame:
        """Rows of these kinds; no kinds means every row, and an unknown kind is an error."""
        check_kinds(kinds)
        return self._frame[self._frame["kind"].isin(kinds)] if kinds else self._frame

    def anchors(self) -> pd.DataFrame:
        """The anchor rows: ``id``, ``date``, ``name``, ``state`` (what ``Tape.anchors()`` and ``%anchors`` call
        it: the state dict, else ``None``) and the whole ``payload`` as before."""
        self._need("anchors", "id", "date", "name", "payload")
        columns = ["id", "date", "name", "payload"]
        if TAPE_NAME in self._frame.columns:
            columns.insert(0, TAPE_NAME)
        anchors = self._frame[self._frame["kind"] == "anchor"][columns]
        states = [_state(payload) for payload in anchors["payload"].tolist()]
        anchors.insert(len(columns) - 1, "state", pd.Series(states, index=anchors.index, dtype="object"))
        return anchors

    def summary(self, by: Sequence[str] = ("phase", "kind")) -> pd.DataFrame:
        """Entry counts per phase and kind (per tape too, on a frame of several), a picture of a session."""
        keys = list(by)
        if TAPE_NAME in self._frame.columns and TAPE_NAME not in keys and self._frame[TAPE_NAME].nunique() > 1:
            keys.insert(0, TAPE_NAME)
        return self._frame.groupby(keys, observed=True, sort=False).size().unstack(fill_value=0)

    def usage(
        self,
        by: Any = "phase",
        prices: Mapping[str, Mapping[str, float]] | None = None,
        *,
        forked: bool = False,
    ) -> pd.DataFrame:
        """The budget per group of the ``run`` and ``summary`` events: turns, tokens in and out, and cost.

        ``by`` is a column (``phase``, ``model``, ``tape_name``, ``notebook``, ...), a ``pd.Grouper``
        (``pd.Grouper(key="date", freq="D")`` for days), or a list of them. ``phase`` means each phase
        instance: a row per phase anchor, with its ``phase_id`` and ``phase_seq`` beside the name.
        Costs use ``prices`` or the table in use (``bub_nb.set_prices``, ``BUB_PRICES``); a group holding a
        turn on a model without a price costs NaN. On a frame of several tapes the groups are per tape unless
        ``by`` names ``tape_name`` or is a list that leaves it out on purpose (``by=["model"]``: totals across
        tapes); rows a fork copied from a tape also in the frame count once, unless ``forked``.
        """
        self._need("usage", "name", "payload", "prompt_tokens", "completion_tokens")
        from bub_nb.tape.reports.usage import usage_frame

        keys = [by] if isinstance(by, str | pd.Grouper) else list(by)
        several = TAPE_NAME in self._frame.columns and self._frame[TAPE_NAME].nunique() > 1
        if isinstance(by, str | pd.Grouper) and several and by != TAPE_NAME:
            keys.insert(0, TAPE_NAME)
        if isinstance(by, str | pd.Grouper) and "archived" in self._frame.columns and self._frame["archived"].any():
            keys.insert(keys.index(TAPE_NAME) + 1 if TAPE_NAME in keys else 0, "archived")  # an archive's own phases
        return usage_frame(self._frame, keys, prices, forked=forked)

    # -- tables ---------------------------------------------------------------------------------------

    def runs(self, prices: Mapping[str, Mapping[str, float]] | None = None, *, forked: bool = False) -> pd.DataFrame:
        """One row per turn (per ``run`` event): tape, phase instance, model in one spelling, status, start,
        end and latency, steps, every token count, cost, prompt and answer, tool calls, errors, retried and
        partial flags. The columns are listed in docs/schema.md. A turn a fork copied from a tape also in the
        frame counts once, in the tape it ran on, unless ``forked``."""
        self._need("runs", "name", "payload", "meta", "date", "role", "content", "tools", "phase", "run_id")
        from bub_nb.tape.frames.runs import runs_frame

        return runs_frame(self._counted(forked), prices)

    def tool_calls(self, *, forked: bool = False) -> pd.DataFrame:
        """One row per tool call: call id, the tool in both spellings, parsed arguments, success, error kind
        and message, result and seconds to it, paired by call id. The columns are in docs/schema.md. A call
        a fork copied from a tape also in the frame counts once, unless ``forked``."""
        self._need("tool_calls", "payload", "date", "run_id", "phase")
        from bub_nb.tape.frames.tool_calls import tool_calls_frame

        return tool_calls_frame(self._counted(forked))

    def _counted(self, forked: bool) -> pd.DataFrame:
        """The frame, less the rows a fork copied from a tape it also holds unless ``forked`` (docs/schema.md)."""
        from bub_nb.tape.reports.usage import counted_once

        if forked:
            return self._frame
        keep = counted_once(self._frame)
        return self._frame if keep.all() else self._frame[keep]

    @property
    def plot(self) -> Any:
        """Figures: ``plot.tokens(by=...)``, ``plot.timeline()``, ``plot.tool_failures()`` (matplotlib)."""
        from bub_nb.tape.frames.plots import TapePlots

        return TapePlots(self._frame)

    # -- saving ---------------------------------------------------------------------------------------

    def to_parquet(self, path: str | Path) -> None:
        """Save the frame as Parquet, ``payload`` and ``meta`` as JSON text (``bub_nb.read_frame`` reads it)."""
        from bub_nb.tape.frames.saved import save_parquet

        save_parquet(self._frame, path)

    def to_csv(self, path: str | Path) -> None:
        """Save the frame as CSV, ``payload``, ``meta`` and ``tools`` as JSON text (``read_frame`` reads it)."""
        from bub_nb.tape.frames.saved import save_csv

        save_csv(self._frame, path)

    def to_arrow(self) -> Any:
        """The frame as a ``pyarrow.Table``, ``payload`` and ``meta`` as JSON text, as ``Tape.to_arrow()``."""
        from bub_nb.tape.frames.saved import frame_to_arrow

        return frame_to_arrow(self._frame)

    # -- back to entries and messages -------------------------------------------------------------

    def entries(self) -> list[TapeEntry]:
        """The rows as entries, in row order."""
        self._need("entries", "payload", "meta", "date")
        return frame_to_entries(self._frame)

    def to_messages(self) -> list[dict[str, Any]]:
        """The rows as OpenAI chat messages in tape order (by id), by the same rules as a view."""
        self._single("to_messages")
        self._need("to_messages", "payload", "meta", "date")
        ordered = self._frame.sort_values("id", kind="stable")
        return seams.messages(frame_to_entries(ordered))


def _tape(key: Any) -> Any:
    """A tape's name from its group key (``(tape_name, archived)`` on a frame with archives)."""
    return key[0] if isinstance(key, tuple) else key


def _state(payload: Any) -> dict[str, Any] | None:
    state = payload.get("state") if isinstance(payload, dict) else None
    return state if isinstance(state, dict) else None
