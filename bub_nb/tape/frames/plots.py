"""``df.tape.plot``: tokens over time, a phase timeline per tape, tool failures over time, as matplotlib figures.

Every figure stays readable at the size of a class's home: periods run in time order with empty ones shown,
at most ``top`` series or lanes are drawn and the rest summed into one, and fork copies count once (the rule
of docs/schema.md; ``forked=True`` counts them as the counting helpers do)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from bub_nb.errors import TapeError
from bub_nb.tape.stores.columns import FORKED_FROM, TAPE_NAME

if TYPE_CHECKING:
    from matplotlib.figure import Figure

OVERFLOW = "auto_handoff/context_overflow"
TOP = 12  # series or lanes drawn before the rest are summed into one
IDLE = pd.Timedelta(hours=1)  # a pause this long inside a phase is drawn as a gap, not as work
_TICKS = 16  # period labels at most along an axis


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use(matplotlib.get_backend())  # whatever the notebook or the script chose
        import matplotlib.pyplot as plt
    except ImportError:
        raise TapeError("plots need matplotlib: pip install -e '.[lab]' in the bub_nb checkout") from None
    return plt


def _busiest(table: pd.DataFrame, top: int, rest: str) -> pd.DataFrame:
    """The ``top`` columns with the largest totals, in that order, and the others summed into ``rest``."""
    order = table.sum().sort_values(ascending=False, kind="stable").index
    if len(order) <= top:
        return table[order]
    kept = table[order[:top]].copy()
    kept[f"{rest} ({len(order) - top})"] = table[order[top:]].sum(axis=1)
    return kept


def _periods(table: pd.DataFrame, freq: str) -> pd.DataFrame:
    """Rows for every period from the first to the last, in time order, an empty period as zeros."""
    if table.empty:
        return table
    index = pd.DatetimeIndex(table.index)
    every = pd.date_range(index.min(), index.max(), freq=freq)
    return table.groupby(level=0).sum().reindex(every, fill_value=0)


def _bars(axes: Any, table: pd.DataFrame, freq: str, colors: list[Any] | None = None) -> None:
    """Stacked bars, one per period, in one call per series; period labels thinned to stay legible."""
    positions = np.arange(len(table))
    bottom = np.zeros(len(table))
    for number, column in enumerate(table.columns):
        values = table[column].to_numpy(dtype=float)
        color = colors[number] if colors is not None else f"C{number % 10}"
        axes.bar(positions, values, bottom=bottom, width=0.85, label=str(column)[:32], color=color)
        bottom += values
    step = max(1, -(-len(table) // _TICKS))
    spelled = "%Y-%m-%d" if freq.upper().startswith(("D", "W", "M", "Q", "Y")) else "%Y-%m-%d %H:%M"
    axes.set_xticks(positions[::step], [moment.strftime(spelled) for moment in table.index[::step]], rotation=45)
    axes.tick_params(axis="x", labelsize=8)
    if len(table.columns) > 1:
        axes.legend(loc="center left", bbox_to_anchor=(1, 0.5), fontsize=8)


class TapePlots:
    """Figures of a tape frame; each is returned, so it shows in a notebook and saves with ``savefig``."""

    def __init__(self, frame: pd.DataFrame) -> None:
        self._frame = frame

    def tokens(self, by: str = TAPE_NAME, freq: str = "D", *, top: int = TOP, forked: bool = False) -> Figure:
        """Tokens (in and out, summaries included) per ``freq`` period, stacked by ``by``: every period from the
        first to the last in order (an idle stretch shows as empty periods), the ``top`` largest values of ``by``
        and the rest summed. ``by="phase"`` draws each phase instance apart (``name #2`` for a name's second)."""
        usage = self._frame.tape.usage(by=[pd.Grouper(key="date", freq=freq), by], forked=forked).reset_index()
        if by == "phase":
            seq = usage["phase_seq"].fillna(1).astype(int)
            label = usage["phase"].astype(object).fillna("(before any phase)").astype(str)
            usage["phase"] = label.where(seq <= 1, label + " #" + seq.astype(str))
        usage[by] = usage[by].astype(object).fillna("(none)").astype(str)
        usage["tokens"] = usage["tokens_in"] + usage["tokens_out"]
        spent = usage.pivot_table(index="date", columns=by, values="tokens", aggfunc="sum", fill_value=0)
        spent = _periods(_busiest(spent, top, "other"), freq)
        plt = _pyplot()
        figure, axes = plt.subplots(figsize=(10, 4))
        if not spent.empty:
            _bars(axes, spent, freq)
        axes.set_xlabel(f"period ({freq})")
        axes.set_ylabel("tokens")
        axes.set_title(f"Tokens per period and {by}")
        figure.tight_layout()
        plt.close(figure)
        return figure

    def timeline(self, *, top: int = TOP, idle: pd.Timedelta = IDLE) -> Figure:
        """One lane per tape for the ``top`` busiest tapes (most entries) and one lane for the rest, in hours
        since each tape began. A phase is drawn where it had entries: a pause longer than ``idle`` is a gap,
        not work. Overflows are red and marked with a cross, other phase anchors with a tick; the entries a fork
        copied keep their parent's dates, so a fork's lane starts at its own first entry, marked with a circle."""
        frame = self._frame
        tapes = frame[TAPE_NAME].astype(object) if TAPE_NAME in frame.columns else pd.Series("tape", index=frame.index)
        copied = np.zeros(len(frame), dtype=bool)
        if FORKED_FROM in frame.columns:
            copied = frame[FORKED_FROM].notna().to_numpy(dtype=bool)
        own = pd.DataFrame(
            {"tape": tapes.to_numpy(), "date": frame["date"].to_numpy(), "phase": frame["phase"].to_numpy(dtype=object),
             "phase_id": frame["phase_id"].to_numpy(dtype="float64", na_value=np.nan)}
        )[~copied & frame["date"].notna().to_numpy(dtype=bool)]  # fmt: skip
        sizes = own.groupby("tape", sort=False).size().sort_values(ascending=False, kind="stable")
        lanes = list(sizes.index[:top])
        rest = len(sizes) - len(lanes)
        own["lane"] = own["tape"].map({tape: number for number, tape in enumerate(lanes)}).fillna(len(lanes))
        forks = set(tapes[copied].unique()) if copied.any() else set()
        plt = _pyplot()
        figure, axes = plt.subplots(figsize=(10, 1.2 + 0.45 * (len(lanes) + (rest > 0))))
        starts = own.groupby("tape", sort=False)["date"].transform("min")
        own["hours"] = (own["date"] - starts).dt.total_seconds() / 3600
        own = own.sort_values(["tape", "date"], kind="stable")
        # a segment of work: the rows of one phase of one tape without a pause longer than ``idle`` between them
        pause = own["date"].diff() > idle
        new = (own["tape"] != own["tape"].shift()) | (own["phase_id"] != own["phase_id"].shift()) | pause
        own["segment"] = new.cumsum()
        segments = own.groupby("segment", sort=False).agg(
            lane=("lane", "first"), phase=("phase", "first"), start=("hours", "min"), end=("hours", "max")
        )
        width = max(float(own["hours"].max()) if len(own) else 0.0, 1e-9) / 400  # a lone entry stays visible
        for lane, drawn in segments.groupby("lane", sort=True):
            other = lane >= len(lanes)
            overflow = (drawn["phase"] == OVERFLOW).to_numpy()
            colors = ["tab:gray" if other else ("tab:red" if hit else "tab:blue") for hit in overflow]
            spans = list(zip(drawn["start"], np.maximum(drawn["end"] - drawn["start"], width), strict=True))
            axes.broken_barh(spans, (lane - 0.25, 0.5), facecolors=colors, edgecolors="white", linewidth=0.3)
        marks = own[own["phase_id"].notna() & ~own["phase_id"].duplicated() & (own["lane"] < len(lanes))]
        flooded = (marks["phase"] == OVERFLOW).to_numpy()
        axes.scatter(marks["hours"][~flooded], marks["lane"][~flooded], marker="|", color="black", s=60, zorder=3)
        axes.scatter(marks["hours"][flooded], marks["lane"][flooded], marker="x", color="black", s=40, zorder=3)
        forked = [number for number, tape in enumerate(lanes) if tape in forks]
        if forked:
            axes.scatter([0] * len(forked), forked, marker="o", facecolors="none", edgecolors="black", s=50, zorder=3)
        labels = [str(tape)[:24] for tape in lanes] + ([f"{rest} other tapes"] if rest else [])
        axes.set_yticks(range(len(labels)), labels)
        axes.set_ylim(len(labels) - 0.5, -0.5)
        axes.set_xlabel(f"hours since the tape began (gaps: pauses longer than {_spelled(idle)})")
        axes.set_title("Phases per tape (red: context overflow; |: phase anchor; o: a fork, its copies left out)")
        figure.tight_layout()
        plt.close(figure)
        return figure

    def tool_failures(self, freq: str = "D", *, forked: bool = False) -> Figure:
        """Tool calls per ``freq`` period, split into those that succeeded and those that failed, every period
        from the first to the last in order."""
        calls = self._frame.tape.tool_calls(forked=forked)
        plt = _pyplot()
        figure, axes = plt.subplots(figsize=(10, 4))
        if not calls.empty:
            outcome = calls["ok"].map({True: "ok", False: "failed"}).astype(object).fillna("no result")
            counts = calls.assign(outcome=outcome).groupby([pd.Grouper(key="called", freq=freq), "outcome"]).size()
            table = _periods(counts.unstack(fill_value=0), freq)
            palette = {"ok": "tab:green", "failed": "tab:red", "no result": "tab:gray"}
            table = table[[column for column in palette if column in table.columns]]
            _bars(axes, table, freq, [palette[column] for column in table.columns])
        axes.set_xlabel(f"period ({freq})")
        axes.set_ylabel("tool calls")
        axes.set_title("Tool calls and failures")
        figure.tight_layout()
        plt.close(figure)
        return figure


def _spelled(span: pd.Timedelta) -> str:
    minutes = int(span.total_seconds() // 60)
    return f"{minutes // 60} h" if minutes % 60 == 0 else f"{minutes} min"
