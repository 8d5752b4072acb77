"""``df.tape.runs()``: one row per turn, from the ``run`` event that closes it and the entries before it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from bub_nb.tape.frames.columns import part_keys
from bub_nb.tape.reports.prices import PER_TOKENS, current_prices, price_of
from bub_nb.tape.stores.columns import FORKED_FROM, TAPE_NAME, token_count

RUN_COLUMNS = (
    TAPE_NAME, "run_id", "phase", "phase_id", "model", "provider", "status", "start", "end", "latency_s", "steps",
    "input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens", "summary_tokens", "cost",
    "prompt", "answer", "tool_calls", "errors", "retried", "partial", FORKED_FROM,
)  # fmt: skip


_FROM_EVENT = (
    "model", "provider", "status", "latency_s", "steps", "input_tokens", "output_tokens", "cached_tokens",
    "reasoning_tokens", "cost",
)  # fmt: skip


def model_name(model: Any, provider: Any) -> str | None:
    """One spelling per model: bub_nb writes ``openai:gpt-4o-mini``, Bub ``gpt-4o-mini`` with ``provider``."""
    if not isinstance(model, str):
        return None
    if ":" not in model and isinstance(provider, str) and provider:
        return f"{provider}:{model}"
    return model


def _usage_count(usage: Mapping[str, Any], *path: str) -> int | None:
    value: Any = usage
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return token_count(value)


def turn_numbers(frame: pd.DataFrame, closing: np.ndarray) -> np.ndarray:
    """For each row, the number of the turn it belongs to: the first ``closing`` row at or after it in the
    same tape (a tape's rows are together, in tape order); -1 for rows after a tape's last closing row."""
    tapes = _tape_numbers(frame)
    at = np.flatnonzero(closing)
    following = np.searchsorted(at, np.arange(len(frame)))
    turn = np.full(len(frame), -1, dtype=np.int64)
    inside = following < len(at)
    rows = np.flatnonzero(inside)
    same = tapes[at[following[inside]]] == tapes[rows]
    turn[rows[same]] = following[rows[same]]
    return turn


def runs_frame(frame: pd.DataFrame, prices: Mapping[str, Mapping[str, float]] | None = None) -> pd.DataFrame:
    """One row per ``run`` event (a turn): see ``RUN_COLUMNS`` and docs/schema.md."""
    closing = _is(frame, "event", "run")
    turn = turn_numbers(frame, closing)
    at = np.flatnonzero(closing)
    dates = frame["date"]
    table = current_prices() if prices is None else prices
    rows: dict[str, list[Any]] = {column: [] for column in RUN_COLUMNS}
    payloads = frame["payload"].to_numpy(dtype=object)
    for row in at:
        data = payloads[row].get("data")
        data = data if isinstance(data, dict) else {}
        found = data.get("usage")
        usage: dict[str, Any] = found if isinstance(found, dict) else {}
        model = model_name(data.get("model"), data.get("provider"))
        provider = data.get("provider")
        if not isinstance(provider, str) and isinstance(model, str) and ":" in model:
            provider = model.split(":", 1)[0]
        rows["model"].append(model)
        rows["provider"].append(provider if isinstance(provider, str) else None)
        rows["status"].append(data.get("status") if isinstance(data.get("status"), str) else None)
        elapsed = data.get("elapsed_ms")
        rows["latency_s"].append(elapsed / 1000 if isinstance(elapsed, int | float) and elapsed == elapsed else None)
        rows["steps"].append(token_count(data.get("steps")))
        input_tokens, output_tokens = _usage_count(usage, "prompt_tokens"), _usage_count(usage, "completion_tokens")
        rows["input_tokens"].append(input_tokens)
        rows["output_tokens"].append(output_tokens)
        # A reported 0 is a count (nothing came from the cache), not a missing one.
        cached = _usage_count(usage, "prompt_tokens_details", "cached_tokens")
        rows["cached_tokens"].append(cached if cached is not None else _usage_count(usage, "cached_tokens"))
        reasoning = _usage_count(usage, "completion_tokens_details", "reasoning_tokens")
        rows["reasoning_tokens"].append(reasoning if reasoning is not None else _usage_count(usage, "reasoning_tokens"))
        price = price_of(data.get("model"), table) if isinstance(data.get("model"), str) else None
        rows["cost"].append(
            ((input_tokens or 0) * price["input"] + (output_tokens or 0) * price["output"]) / PER_TOKENS
            if price is not None
            else None
        )
    # what the entries of each turn say, read from the few rows of each kind that say it
    count = len(at)
    starts = np.zeros(count, dtype=np.int64)
    member = np.flatnonzero(turn >= 0)
    if len(member):
        first = np.r_[True, turn[member][1:] != turn[member][:-1]]
        starts[turn[member][first]] = member[first]
    messages = np.flatnonzero(((frame["kind"] == "message").to_numpy(dtype=bool)) & (turn >= 0))
    roles = frame["role"].iloc[messages].to_numpy(dtype=object)
    contents = frame["content"].iloc[messages].to_numpy(dtype=object)
    prompts = _first_per_turn(turn[messages][roles == "user"], contents[roles == "user"], count)
    answers = _first_per_turn(turn[messages][roles == "assistant"][::-1], contents[roles == "assistant"][::-1], count)
    metas = frame["meta"].iloc[messages].to_numpy(dtype=object) if "meta" in frame.columns else []
    partial = np.zeros(count, dtype=bool)
    partial[[t for t, m in zip(turn[messages], metas, strict=False) if m.get("partial")]] = True
    summaries = np.flatnonzero(_is(frame, "event", "summary") & (turn >= 0))
    spent = frame["prompt_tokens"].iloc[summaries].fillna(0).to_numpy(dtype=np.int64) + frame["completion_tokens"].iloc[
        summaries
    ].fillna(0).to_numpy(dtype=np.int64)
    calls = np.flatnonzero((frame["kind"] == "tool_call").to_numpy(dtype=bool) & (turn >= 0))
    asked = [len(tools) if isinstance(tools, list | np.ndarray) else 0 for tools in frame["tools"].iloc[calls].tolist()]
    errors = np.flatnonzero((frame["kind"] == "error").to_numpy(dtype=bool) & (turn >= 0))
    retries = np.flatnonzero(_is(frame, "event", "loop.step") & (turn >= 0))
    out = pd.DataFrame({key: rows[key] for key in _FROM_EVENT}, index=pd.RangeIndex(len(at)))
    out.insert(0, TAPE_NAME, frame[TAPE_NAME].to_numpy(dtype=object)[at] if TAPE_NAME in frame.columns else None)
    out.insert(1, "run_id", frame["run_id"].to_numpy(dtype=object)[at])
    out.insert(2, "phase", frame["phase"].to_numpy(dtype=object)[at])
    out.insert(3, "phase_id", frame["phase_id"].iloc[at].to_numpy() if "phase_id" in frame.columns else None)
    out["start"] = dates.iloc[starts].to_numpy(dtype="datetime64[us]") if count else []
    out["end"] = dates.iloc[at].to_numpy(dtype="datetime64[us]")
    out["start"] = pd.to_datetime(out["start"], utc=True)
    out["end"] = pd.to_datetime(out["end"], utc=True)
    measured = pd.to_numeric(out["latency_s"], errors="coerce")
    from_dates = (pd.Series(out["end"]) - pd.Series(out["start"])).dt.total_seconds()
    out["latency_s"] = measured.fillna(from_dates)
    out["summary_tokens"] = np.bincount(turn[summaries], weights=spent, minlength=count).astype(np.int64)
    out["prompt"] = pd.array(prompts, dtype=pd.StringDtype(na_value=np.nan))
    out["answer"] = pd.array(answers, dtype=pd.StringDtype(na_value=np.nan))
    out["tool_calls"] = np.bincount(turn[calls], weights=asked, minlength=count).astype(np.int64)
    out["errors"] = np.bincount(turn[errors], minlength=count).astype(np.int64)
    out["retried"] = np.bincount(turn[retries], minlength=count) > 0
    out["partial"] = partial
    out[FORKED_FROM] = frame[FORKED_FROM].to_numpy(dtype=object)[at] if FORKED_FROM in frame.columns else None
    archived = ["archived"] if "archived" in frame.columns else []  # a frame read with its archives
    if archived:
        out["archived"] = frame["archived"].to_numpy(dtype=bool)[at]
    for column in ("steps", "input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens", "phase_id"):
        out[column] = pd.array(out[column].tolist() if len(out) else [], dtype="Int64")
    out["cost"] = pd.to_numeric(out["cost"], errors="coerce").astype("float64")
    return out[[*RUN_COLUMNS, *archived]].reset_index(drop=True)


def _is(frame: pd.DataFrame, kind: str, name: str) -> np.ndarray:
    """Rows of that kind and name, compared column-wise (the categorical and Arrow columns compare in C)."""
    return (frame["kind"] == kind).to_numpy(dtype=bool) & (frame["name"] == name).to_numpy(dtype=bool, na_value=False)


def _first_per_turn(turns: np.ndarray, values: np.ndarray, count: int) -> list[Any]:
    """For each of ``count`` turns, the first of ``values`` in it (``turns`` says whose each value is)."""
    out: list[Any] = [None] * count
    if len(turns):
        numbers, first = np.unique(turns, return_index=True)
        for number, value in zip(numbers.tolist(), values[first].tolist(), strict=True):
            out[number] = value
    return out


def _tape_numbers(frame: pd.DataFrame) -> np.ndarray:
    """A number per row for its tape (an archive apart from its live tape): a tape's rows are together, so a
    tape starts where the number changes."""
    if TAPE_NAME not in frame.columns or not len(frame):
        return np.zeros(len(frame), dtype=np.int64)
    keys = part_keys(frame)
    changed = np.r_[True, keys[1:] != keys[:-1]]
    return np.cumsum(changed)
