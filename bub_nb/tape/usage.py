"""The budget per phase: turns, tokens in and out, and their cost, read from the ``run`` events that close turns."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bub_nb.errors import TapeError
from bub_nb.tape.columns import TAPE_NAME
from bub_nb.tape.entries import TapeEntry, is_phase_anchor
from bub_nb.tape.events import run_data, run_usage
from bub_nb.tape.prices import cost_of, current_prices

if TYPE_CHECKING:
    import pandas as pd

USAGE_COLUMNS = ("turns", "tokens_in", "tokens_out", "cost")
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
        data = run_data(entry)
        if data is None:
            continue
        usage = run_usage(entry)
        tokens_in, tokens_out = _tokens(usage, "prompt_tokens"), _tokens(usage, "completion_tokens")
        cost = cost_of(data.get("model"), tokens_in, tokens_out, table)
        row = sums.setdefault(len(phases) - 1, [0, 0, 0, 0.0])
        row[0] += 1
        row[1] += tokens_in
        row[2] += tokens_out
        row[3] = None if cost is None or row[3] is None else row[3] + cost
    return [PhaseUsage(*phases[at], *row) for at, row in sorted(sums.items())]


def usage_frame(
    frame: pd.DataFrame, by: str | Sequence[str] = "phase", prices: Mapping[str, Mapping[str, float]] | None = None
) -> pd.DataFrame:
    """Turns, tokens in and out and cost per group of a tape frame's ``run`` events (``by``: phase, model,
    tape_name, or several); groups keep their tape order, and a group with an unpriced turn costs NaN."""
    import pandas as pd

    keys = [by] if isinstance(by, str) else list(by)
    unknown = [key for key in keys if key not in GROUPS]
    if not keys or unknown:
        raise TapeError(f"usage(by={by!r}) groups by {', '.join(GROUPS)} (one or several); got {unknown or by!r}")
    table = current_prices() if prices is None else prices
    runs = frame[(frame["kind"] == "event") & (frame["name"] == "run")]
    models = [(payload.get("data") or {}).get("model") for payload in runs["payload"]]
    tokens_in = runs["prompt_tokens"].fillna(0).astype("int64").to_numpy()
    tokens_out = runs["completion_tokens"].fillna(0).astype("int64").to_numpy()
    costs = [cost_of(model, int(i), int(o), table) for model, i, o in zip(models, tokens_in, tokens_out, strict=True)]
    rows = pd.DataFrame(
        {
            "phase": runs["phase"].to_numpy(dtype=object) if "phase" in runs.columns else None,
            "model": models,
            "tokens_in": tokens_in,
            "tokens_out": tokens_out,
            "cost": pd.array([float("nan") if c is None else c for c in costs], dtype="float64"),
            "unpriced": [c is None for c in costs],
        }
    )
    if TAPE_NAME in keys:
        if TAPE_NAME not in runs.columns:
            raise TapeError(f"usage(by={by!r}) needs a frame of several tapes, with a {TAPE_NAME!r} column")
        rows[TAPE_NAME] = runs[TAPE_NAME].to_numpy(dtype=object)
    grouped = rows.groupby(keys, sort=False, dropna=False)
    result = grouped.agg(
        turns=("tokens_in", "size"),
        tokens_in=("tokens_in", "sum"),
        tokens_out=("tokens_out", "sum"),
        cost=("cost", "sum"),
        unpriced=("unpriced", "any"),
    )
    result.loc[result["unpriced"], "cost"] = float("nan")
    return result.drop(columns="unpriced")
