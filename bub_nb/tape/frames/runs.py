"""``df.tape.runs()``: one row per turn, from the ``run`` event that closes it and the entries before it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

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
    tapes = frame[TAPE_NAME].to_numpy(dtype=object) if TAPE_NAME in frame.columns else np.zeros(len(frame))
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
    names = frame["name"].to_numpy(dtype=object)
    kinds = frame["kind"].to_numpy(dtype=object)
    closing = (kinds == "event") & (names == "run")
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
        rows["cached_tokens"].append(
            _usage_count(usage, "prompt_tokens_details", "cached_tokens") or _usage_count(usage, "cached_tokens")
        )
        rows["reasoning_tokens"].append(
            _usage_count(usage, "completion_tokens_details", "reasoning_tokens")
            or _usage_count(usage, "reasoning_tokens")
        )
        price = price_of(data.get("model"), table) if isinstance(data.get("model"), str) else None
        rows["cost"].append(
            ((input_tokens or 0) * price["input"] + (output_tokens or 0) * price["output"]) / PER_TOKENS
            if price is not None
            else None
        )
    # what the entries of each turn say, worked out on the rows that belong to a turn only
    member = turn >= 0
    parts = pd.DataFrame(
        {
            "turn": turn[member],
            "date": dates.to_numpy()[member],
            "kind": kinds[member],
            "role": frame["role"].to_numpy(dtype=object)[member],
            "name": names[member],
            "content": frame["content"].to_numpy(dtype=object)[member],
            "tools": frame["tools"].to_numpy(dtype=object)[member],
            "summary": np.asarray(frame["prompt_tokens"].fillna(0), dtype=np.int64)[member]
            + np.asarray(frame["completion_tokens"].fillna(0), dtype=np.int64)[member],
            "partial": [bool(m.get("partial")) for m in frame["meta"].to_numpy(dtype=object)[member]]
            if "meta" in frame.columns
            else False,
        }
    )
    parts["summary"] = parts["summary"].where((parts["kind"] == "event") & (parts["name"] == "summary"), 0)
    parts["calls"] = [
        len(t) if k == "tool_call" and isinstance(t, list) else 0
        for t, k in zip(parts["tools"], parts["kind"], strict=True)
    ]
    parts["error"] = parts["kind"] == "error"
    parts["retry"] = (parts["kind"] == "event") & (parts["name"] == "loop.step")
    users = parts[(parts["kind"] == "message") & (parts["role"] == "user")].groupby("turn")["content"].first()
    answers = parts[(parts["kind"] == "message") & (parts["role"] == "assistant")].groupby("turn")["content"].last()
    grouped = parts.groupby("turn")
    sums = grouped[["summary", "calls", "error", "retry", "partial"]].sum()
    starts = grouped["date"].min()
    numbers = np.arange(len(at))
    out = pd.DataFrame({key: rows[key] for key in _FROM_EVENT}, index=pd.RangeIndex(len(at)))
    out.insert(0, TAPE_NAME, frame[TAPE_NAME].to_numpy(dtype=object)[at] if TAPE_NAME in frame.columns else None)
    out.insert(1, "run_id", frame["run_id"].to_numpy(dtype=object)[at])
    out.insert(2, "phase", frame["phase"].to_numpy(dtype=object)[at])
    out.insert(3, "phase_id", frame["phase_id"].iloc[at].to_numpy() if "phase_id" in frame.columns else None)
    out["start"] = pd.to_datetime(starts.reindex(numbers).to_numpy(), utc=True)
    out["end"] = pd.to_datetime(dates.to_numpy()[at], utc=True)
    measured = pd.to_numeric(out["latency_s"], errors="coerce")
    from_dates = (pd.Series(out["end"]) - pd.Series(out["start"])).dt.total_seconds()
    out["latency_s"] = measured.fillna(from_dates)
    out["summary_tokens"] = sums["summary"].reindex(numbers, fill_value=0).to_numpy()
    out["prompt"] = users.reindex(numbers).to_numpy()
    out["answer"] = answers.reindex(numbers).to_numpy()
    out["tool_calls"] = sums["calls"].reindex(numbers, fill_value=0).to_numpy()
    out["errors"] = sums["error"].reindex(numbers, fill_value=0).to_numpy()
    out["retried"] = sums["retry"].reindex(numbers, fill_value=0).to_numpy() > 0
    out["partial"] = sums["partial"].reindex(numbers, fill_value=0).to_numpy() > 0
    out[FORKED_FROM] = frame[FORKED_FROM].to_numpy(dtype=object)[at] if FORKED_FROM in frame.columns else None
    for column in ("steps", "input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens", "phase_id"):
        out[column] = pd.array(out[column].tolist() if len(out) else [], dtype="Int64")
    out["cost"] = pd.to_numeric(out["cost"], errors="coerce").astype("float64")
    return out[list(RUN_COLUMNS)].reset_index(drop=True)
