"""The budget per phase: turns, tokens and cost, from the ``run`` events and the ``summary`` events outside turns."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bub_nb.errors import TapeAddressError, TapeError
from bub_nb.tape.entries import TapeEntry, is_phase_anchor
from bub_nb.tape.events import RUN, SUMMARY, run_data
from bub_nb.tape.names import TapeAddress
from bub_nb.tape.reports.prices import PER_TOKENS, cost_of, current_prices, price_of
from bub_nb.tape.stores.columns import FORKED_FROM, TAPE_NAME

if TYPE_CHECKING:
    import pandas as pd

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


CACHED = ("prompt_tokens_details", "cached_tokens")
"""Where a ``run`` event's usage holds the prompt tokens read from the endpoint's cache (part of ``prompt_tokens``)."""
REASONING = ("completion_tokens_details", "reasoning_tokens")
"""Where it holds the completion tokens spent reasoning (part of ``completion_tokens``)."""


def _detail(payload: Mapping[str, Any], group: str, name: str) -> int:
    data = payload.get("data")
    usage = data.get("usage") if isinstance(data, dict) else None
    details = usage.get(group) if isinstance(usage, dict) else None
    value = details.get(name) if isinstance(details, dict) else None
    return value if type(value) is int else 0


def _model(payload: Mapping[str, Any]) -> str | None:
    data = payload.get("data")
    model = data.get("model") if isinstance(data, dict) else None
    return model if isinstance(model, str) else None


def _estimated(payload: Mapping[str, Any]) -> bool:
    """Whether a run's usage is bub_nb's estimate (its endpoint reported none), not the endpoint's count."""
    data = payload.get("data")
    usage = data.get("usage") if isinstance(data, dict) else None
    return isinstance(usage, dict) and usage.get("estimated") is True


Key = Any  # a column name, or a ``pd.Grouper``


def counted_once(frame: pd.DataFrame) -> Any:
    """Which rows count toward totals: every row but those a fork copied from a tape the frame also holds
    (each turn is counted in the tape it ran on, once)."""
    import numpy as np

    keep = np.ones(len(frame), dtype=bool)
    if FORKED_FROM not in frame.columns or TAPE_NAME not in frame.columns:
        return keep
    copied = frame[FORKED_FROM].notna().to_numpy(dtype=bool)
    if not copied.any():
        return keep
    tapes = set(frame[TAPE_NAME].dropna().unique().tolist())
    sources = [_source_tape(address) for address in frame[FORKED_FROM].to_numpy(dtype=object)[copied]]
    keep[np.flatnonzero(copied)] = [source not in tapes for source in sources]
    return keep


def _source_tape(address: Any) -> str | None:
    try:
        return TapeAddress.parse(address).tape
    except TapeAddressError:
        return None


def usage_frame(
    frame: pd.DataFrame,
    by: Key | Sequence[Key] = "phase",
    prices: Mapping[str, Mapping[str, float]] | None = None,
    *,
    forked: bool = False,
) -> pd.DataFrame:
    """Turns, tokens in and out (of which ``cached_tokens`` came from the endpoint's cache and ``reasoning_tokens``
    were spent reasoning) and cost per group of a tape frame's ``run`` and ``summary`` events (a summary
    is spend too: it adds tokens, not turns). ``by`` is any column of the frame, ``model``, or a
    ``pd.Grouper`` (``pd.Grouper(key="date", freq="D")``), or several. ``phase`` means the phase instance:
    one row per phase anchor, indexed by its name, with ``phase_id`` (the anchor's id) and ``phase_seq``
    (1 for the first phase of that name in its tape, 2 for the next) beside it. Groups keep their tape order,
    and a group with an unpriced turn costs NaN. Rows a fork copied from a tape the frame also holds are
    left out, so that each turn counts once, unless ``forked``. ``estimated`` counts the turns whose tokens
    are bub_nb's estimate because their endpoint reported none."""
    import numpy as np
    import pandas as pd

    keys = [by] if isinstance(by, str | pd.Grouper) else list(by)
    columns = [key.key if isinstance(key, pd.Grouper) else key for key in keys]
    unknown = [key for key in columns if not isinstance(key, str) or (key not in frame.columns and key not in GROUPS)]
    if not keys or unknown:
        raise TapeError(
            f"usage(by={by!r}) groups by columns of the frame, model or pd.Grouper(key=COLUMN) (one or several); "
            f"got {unknown or by!r}"
        )
    if TAPE_NAME in columns and TAPE_NAME not in frame.columns:
        raise TapeError(f"usage(by={by!r}) needs a frame with a {TAPE_NAME!r} column")
    table = current_prices() if prices is None else prices
    # Only the usage events' columns are taken, by position: copying whole rows of a big frame costs more.
    events = np.array(frame["kind"] == "event", dtype=bool)
    names = frame["name"].to_numpy(dtype=object)
    runs = events & (names == RUN)
    events = costing_events(frame, names, events)  # the runs, and summaries outside turns
    if not forked:
        events &= counted_once(frame)
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
            "model": models,
            "turn": runs[at],
            "tokens_in": tokens_in,
            "tokens_out": tokens_out,
            "cached_tokens": np.array([_detail(payload, *CACHED) for payload in payloads], dtype="int64"),
            "reasoning_tokens": np.array([_detail(payload, *REASONING) for payload in payloads], dtype="int64"),
            "cost": (tokens_in * per_input + tokens_out * per_output) / PER_TOKENS,
            "unpriced": np.isnan(per_input),
            "estimated": np.array([_estimated(payload) for payload in payloads], dtype="int64") * runs[at],
        }
    )
    group_keys: list[Any] = []
    for key, column in zip(keys, columns, strict=True):
        if column != "model":
            rows[column] = frame[column].iloc[at].reset_index(drop=True)  # its dtype kept, a time zone too
        group_keys.append(key)
        if column == "phase":
            rows["phase_id"] = frame["phase_id"].iloc[at].to_numpy() if "phase_id" in frame.columns else None
            group_keys.append("phase_id")
    grouped = rows.groupby(group_keys, sort=False, dropna=False)
    result = grouped.agg(
        turns=("turn", "sum"),
        tokens_in=("tokens_in", "sum"),
        tokens_out=("tokens_out", "sum"),
        cached_tokens=("cached_tokens", "sum"),
        reasoning_tokens=("reasoning_tokens", "sum"),
        cost=("cost", "sum"),
        unpriced=("unpriced", "any"),
        estimated=("estimated", "sum"),
    )
    result["turns"] = result["turns"].astype("int64")
    result.loc[result["unpriced"], "cost"] = float("nan")
    result = result.drop(columns="unpriced")
    if "phase" in columns:
        result = _phase_instances(result, frame)
    return result


def costing_events(frame: pd.DataFrame, names: Any, events: Any) -> Any:
    """Which rows cost tokens, from which are events (``events``) and their ``names``: the ``run`` events, and
    ``summary`` events outside a turn (a summarizing handoff's model calls; one inside a turn, an auto-handoff's,
    is already in that turn's usage)."""
    import numpy as np

    costing = events.copy()
    costing[events] = np.isin(names[events], [RUN, SUMMARY])
    if "run_id" in frame.columns:
        costing &= (names == RUN) | frame["run_id"].isna().to_numpy(dtype=bool)
    return costing


def _phase_instances(result: pd.DataFrame, frame: pd.DataFrame) -> pd.DataFrame:
    """``phase_id`` out of the index into a column, and ``phase_seq``: which phase of that name it is."""
    import pandas as pd

    result = result.reset_index("phase_id")
    seq: dict[tuple[Any, Any], int] = {}
    if "phase_id" in frame.columns:
        starts = frame[(frame["kind"] == "anchor") & (frame["id"] == frame["phase_id"]).fillna(False)]
        tapes = starts[TAPE_NAME].tolist() if TAPE_NAME in starts.columns else [None] * len(starts)
        counts: dict[tuple[Any, Any], int] = {}
        for tape, name, at in zip(tapes, starts["phase"].tolist(), starts["id"].tolist(), strict=True):
            counts[(tape, name)] = counts.get((tape, name), 0) + 1
            seq[(tape, at)] = counts[(tape, name)]
    if TAPE_NAME in result.index.names:
        tapes = result.index.get_level_values(TAPE_NAME).tolist()
    else:
        only = frame[TAPE_NAME].iloc[0] if TAPE_NAME in frame.columns and len(frame) else None
        tapes = [only] * len(result)
    numbers = [seq.get((tape, at)) for tape, at in zip(tapes, result["phase_id"].tolist(), strict=True)]
    result.insert(1, "phase_seq", pd.array(numbers, dtype="Int64"))
    result["phase_id"] = result["phase_id"].astype("Int64")
    return result
