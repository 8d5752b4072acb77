"""The budget per phase: turns, tokens and cost, from the ``run`` events and the ``summary`` events outside turns."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bub_nb.errors import TapeError
from bub_nb.tape.entries import TapeEntry, is_phase_anchor
from bub_nb.tape.events import RUN, SUMMARY, run_data
from bub_nb.tape.reports.prices import PER_TOKENS, cost_of, current_prices, price_of
from bub_nb.tape.stores.columns import TAPE_NAME

if TYPE_CHECKING:
    import pandas as pd

USAGE_COLUMNS = ("turns", "tokens_in", "tokens_out", "cost", "estimated")
GROUPS = ("phase", "model", TAPE_NAME)


@dataclass(frozen=True, slots=True)
class PhaseUsage:
    """One phase's budget: ``cost`` is ``None`` when a turn of it ran on a model without a price."""

    phase: str | None
    anchor_id: int | None
    turns: int
    tokens_in: int
    tokens_out: int
    cost: float | None


def _tokens(usage: Mapping[str, Any] | None, key: str) -> int:
    value = usage.get(key) if usage is not None else None
    return value if type(value) is int else 0


def phase_usage(
    entries: Iterable[TapeEntry], prices: Mapping[str, Mapping[str, float]] | None = None
) -> list[PhaseUsage]:
    """The budget of every phase that ran a turn, in tape order (a phase is its anchor, so names may repeat)."""
    table = current_prices() if prices is None else prices
    phases: list[tuple[str | None, int | None]] = [(None, None)]
    sums: dict[int, list[Any]] = {}
    for entry in entries:
        if entry.kind == "anchor" and is_phase_anchor(entry.name):
            phases.append((entry.name, entry.id))
            continue
        data = run_data(entry) or outside_summary_data(entry)
        if data is None:
            continue
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else None
        tokens_in, tokens_out = _tokens(usage, "prompt_tokens"), _tokens(usage, "completion_tokens")
        cost = cost_of(data.get("model"), tokens_in, tokens_out, table)
        row = sums.setdefault(len(phases) - 1, [0, 0, 0, 0.0])
        row[0] += 1 if entry.payload.get("name") == RUN else 0
        row[1] += tokens_in
        row[2] += tokens_out
        row[3] = None if cost is None or row[3] is None else row[3] + cost
    return [PhaseUsage(*phases[at], *row) for at, row in sorted(sums.items())]


def outside_summary_data(entry: TapeEntry) -> dict[str, Any] | None:
    """The data of a ``summary`` event written outside a turn (a turn's own is in its ``run`` usage), else None."""
    if entry.kind != "event" or entry.payload.get("name") != SUMMARY or entry.meta.get("run_id"):
        return None
    data = entry.payload.get("data")
    return data if isinstance(data, dict) else None


def _model(payload: Mapping[str, Any]) -> str | None:
    data = payload.get("data")
    model = data.get("model") if isinstance(data, dict) else None
    return model if isinstance(model, str) else None


def _estimated(payload: Mapping[str, Any]) -> bool:
    """Whether a run's usage is bub_nb's estimate (its endpoint reported none), not the endpoint's count."""
    data = payload.get("data")
    usage = data.get("usage") if isinstance(data, dict) else None
    return isinstance(usage, dict) and usage.get("estimated") is True


def usage_frame(
    frame: pd.DataFrame, by: str | Sequence[str] = "phase", prices: Mapping[str, Mapping[str, float]] | None = None
) -> pd.DataFrame:
    """Turns, tokens in and out and cost per group of a tape frame's ``run`` events (``by``: phase, model,
    tape_name, or several); groups keep their tape order, and a group with an unpriced turn costs NaN.
    ``estimated`` counts the turns whose tokens are bub_nb's estimate because their endpoint reported none."""
    import numpy as np
    import pandas as pd

    keys = [by] if isinstance(by, str) else list(by)
    unknown = [key for key in keys if key not in GROUPS]
    if not keys or unknown:
        raise TapeError(f"usage(by={by!r}) groups by {', '.join(GROUPS)} (one or several); got {unknown or by!r}")
    table = current_prices() if prices is None else prices
    # Only the run events' columns are taken, by position: copying whole rows of a big frame costs more.
    events = np.array(frame["kind"] == "event", dtype=bool)
    names = frame["name"].to_numpy(dtype=object)
    events = costing_events(frame, names, events)  # and summaries outside turns
    at = np.flatnonzero(events)
    payloads = frame["payload"].to_numpy(dtype=object)[at]
    models = [_model(payload) for payload in payloads]
    tokens_in = frame["prompt_tokens"].iloc[at].fillna(0).to_numpy(dtype="int64")
    tokens_out = frame["completion_tokens"].iloc[at].fillna(0).to_numpy(dtype="int64")
    # One price lookup per model, then whole columns: a tape has few models and many runs.
    priced = {model: price_of(model, table) for model in set(models)}
    nan = float("nan")
    per_input = np.array([p["input"] if (p := priced[m]) is not None else nan for m in models], dtype=float)
    per_output = np.array([p["output"] if (p := priced[m]) is not None else nan for m in models], dtype=float)
    rows = pd.DataFrame(
        {
            "turn": names[at] == RUN,
            "phase": frame["phase"].to_numpy(dtype=object)[at] if "phase" in frame.columns else None,
            "model": models,
            "tokens_in": tokens_in,
            "tokens_out": tokens_out,
            "cost": (tokens_in * per_input + tokens_out * per_output) / PER_TOKENS,
            "unpriced": np.isnan(per_input),
            "estimated": np.array([_estimated(payload) for payload in payloads], dtype="int64"),
        }
    )
    if TAPE_NAME in keys:
        if TAPE_NAME not in frame.columns:
            raise TapeError(f"usage(by={by!r}) needs a frame of several tapes, with a {TAPE_NAME!r} column")
        rows[TAPE_NAME] = frame[TAPE_NAME].to_numpy(dtype=object)[at]
    grouped = rows.groupby(keys, sort=False, dropna=False)
    result = grouped.agg(
        turns=("turn", "sum"),
        tokens_in=("tokens_in", "sum"),
        tokens_out=("tokens_out", "sum"),
        cost=("cost", "sum"),
        unpriced=("unpriced", "any"),
        estimated=("estimated", "sum"),
    )
    result.loc[result["unpriced"], "cost"] = float("nan")
    return result.drop(columns="unpriced")


def costing_events(frame: pd.DataFrame, names: Any, events: Any) -> Any:
    """Which rows cost tokens, from which are events (``events``) and their ``names``: the ``run`` events, and
    ``summary`` events outside a turn (a summarising handoff's model calls; one inside a turn, an auto-handoff's,
    is already in that turn's usage)."""
    import numpy as np

    costing = events.copy()
    costing[events] = np.isin(names[events], [RUN, SUMMARY])
    if "run_id" in frame.columns:
        costing &= (names == RUN) | frame["run_id"].isna().to_numpy(dtype=bool)
    return costing
