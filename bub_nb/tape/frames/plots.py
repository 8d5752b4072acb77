"""``df.tape.plot``: tokens over time, a phase timeline per tape, tool failures over time, as matplotlib figures."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from bub_nb.errors import TapeError
from bub_nb.tape.stores.columns import TAPE_NAME

if TYPE_CHECKING:
    from matplotlib.figure import Figure

OVERFLOW = "auto_handoff/context_overflow"


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use(matplotlib.get_backend())  # whatever the notebook or the script chose
        import matplotlib.pyplot as plt
    except ImportError:
        raise TapeError("plots need matplotlib: pip install -e '.[lab]' in the bub_nb checkout") from None
    return plt


class TapePlots:
    """Figures of a tape frame; each is returned, so it shows in a notebook and saves with ``savefig``."""

    def __init__(self, frame: pd.DataFrame) -> None:
        self._frame = frame

    def tokens(self, by: str = TAPE_NAME, freq: str = "D") -> Figure:
        """Tokens (in and out, summaries included) per ``freq`` period, a stacked bar per value of ``by``."""
        usage = self._frame.tape.usage(by=[pd.Grouper(key="date", freq=freq), by])
        spent = (usage["tokens_in"] + usage["tokens_out"]).unstack(by, fill_value=0)
        plt = _pyplot()
        figure, axes = plt.subplots(figsize=(9, 4))
        if not spent.empty:
            spent.index = spent.index.strftime("%Y-%m-%d" if freq.upper().startswith("D") else "%Y-%m-%d %H:%M")
            spent.plot.bar(stacked=True, ax=axes, legend=len(spent.columns) <= 12)
        axes.set_xlabel(f"period ({freq})")
        axes.set_ylabel("tokens")
        axes.set_title(f"Tokens per period and {by}")
        figure.tight_layout()
        plt.close(figure)
        return figure

    def timeline(self) -> Figure:
        """One lane per tape, in hours since its first entry: each phase a bar from its anchor to the next,
        overflows in red and marked with a cross, other handoffs with a tick."""
        frame = self._frame
        anchors = frame[(frame["kind"] == "anchor") & (frame["id"] == frame["phase_id"]).fillna(False)]
        tapes = list(dict.fromkeys(frame[TAPE_NAME].tolist())) if TAPE_NAME in frame.columns else [None]
        plt = _pyplot()
        figure, axes = plt.subplots(figsize=(10, 1 + 0.6 * max(len(tapes), 1)))
        for lane, tape in enumerate(tapes):
            rows = frame if tape is None else frame[frame[TAPE_NAME] == tape]
            starts = anchors if tape is None else anchors[anchors[TAPE_NAME] == tape]
            first = rows["date"].min()
            hours = (pd.concat([starts["date"], pd.Series([rows["date"].max()])]) - first).dt.total_seconds() / 3600
            times = hours.tolist()
            for number, (_, anchor) in enumerate(starts.iterrows()):
                begin, until = times[number], times[number + 1]
                overflow = anchor["phase"] == OVERFLOW
                color = "tab:red" if overflow else f"C{number % 10}"
                axes.barh(lane, until - begin, left=begin, height=0.5, color=color, edgecolor="white")
                axes.plot([begin], [lane], marker="x" if overflow else "|", color="black", markersize=8)
        axes.set_yticks(range(len(tapes)), [str(tape)[:24] for tape in tapes])
        axes.set_xlabel("hours since the tape began")
        axes.set_title("Phases per tape (red: context overflow; marks: handoffs)")
        figure.tight_layout()
        plt.close(figure)
        return figure

    def tool_failures(self, freq: str = "D") -> Figure:
        """Tool calls per ``freq`` period, split into those that succeeded and those that failed."""
        calls = self._frame.tape.tool_calls()
        plt = _pyplot()
        figure, axes = plt.subplots(figsize=(9, 4))
        if not calls.empty:
            calls["outcome"] = calls["ok"].map({True: "ok", False: "failed"}).fillna("no result")
            counts = calls.groupby([pd.Grouper(key="called", freq=freq), "outcome"]).size().unstack(fill_value=0)
            counts.index = counts.index.strftime("%Y-%m-%d")
            colors = {"ok": "tab:green", "failed": "tab:red", "no result": "tab:gray"}
            counts.plot.bar(stacked=True, ax=axes, color=[colors[c] for c in counts.columns])
        axes.set_xlabel(f"period ({freq})")
        axes.set_ylabel("tool calls")
        axes.set_title("Tool calls and failures")
        figure.tight_layout()
        plt.close(figure)
        return figure
