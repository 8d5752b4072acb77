"""``df.tape.tool_calls()``: one row per tool call, its result and failure paired with it by call id."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import orjson
import pandas as pd

from bub_nb.tape.frames.columns import part_keys, text_column
from bub_nb.tape.stores.columns import FORKED_FROM, TAPE_NAME
from bub_nb.tape.text import json_text

CALL_COLUMNS = (
    TAPE_NAME, "call_id", "run_id", "phase", "phase_id", "tool", "tool_wire", "tool_dotted", "arguments",
    "called", "answered", "seconds", "ok", "error_kind", "error_message", "result", FORKED_FROM,
)  # fmt: skip
_KINDS = ("tool_call", "tool_result", "error", "message")
_NOT_TEXT = ["ok", "called", "answered", "phase_id", "arguments", "result"]
_AGENTS_MCP = re.compile(r"mcp__(.+?)__(.+)")


def spellings(name: str, mcp: Any = None) -> tuple[str, str]:
    """A tool's name as the model's wire has it (``fs_read``) and as bub_nb registers it (``fs.read``).

    An MCP tool is ``mcp.<server>.<tool>``: its call's ``meta.mcp`` names the server, which may hold ``_`` itself
    (``mcp_my_db_query`` is ``mcp.my_db.query``), and Claude Code's and Codex's ``mcp__<server>__<tool>`` says it.
    """
    wire = name.replace(".", "_")
    server = mcp.get("server") if isinstance(mcp, dict) else None
    if isinstance(server, str) and wire.startswith(prefix := f"mcp_{server}_"):
        return wire, f"mcp.{server}.{wire[len(prefix) :]}"
    if (agents := _AGENTS_MCP.fullmatch(name)) is not None:
        return wire, f"mcp.{agents[1]}.{agents[2]}"
    return wire, name if "." in name else name.replace("_", ".", 1)


def _arguments(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text  # what the model sent, kept as text when it is not JSON


def _failure(result: Any) -> tuple[str, str] | None:
    """A result that is itself a failure (docs/schema.md lists the shapes): ``{kind, message, details?}``, as Bub
    and bub_nb write a call that failed, or ``{"error": ...}``, as earlier releases of bub_nb wrote one."""
    if not isinstance(result, dict):
        return None
    if "error" in result:
        error = result["error"]
        kind = result.get("kind") or result.get("type") or "tool.error"
        return str(kind), error if isinstance(error, str) else json_text(error)
    if "kind" in result and "message" in result:
        message = result["message"]
        return str(result["kind"]), message if isinstance(message, str) else json_text(message)
    return None


def tool_calls_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per call a ``tool_call`` entry (or an assistant message's ``tool_calls``) made. A result is
    the one a ``tool_result`` entry gives at the call's place, or the ``tool`` message naming its call id;
    a failure is an ``error`` entry naming the call id, or a result that is an error."""
    kinds = frame["kind"].to_numpy(dtype=object)
    at = np.flatnonzero(np.isin(kinds, _KINDS))
    tapes = part_keys(frame)
    payloads = frame["payload"].to_numpy(dtype=object)
    dates = frame["date"].dt.tz_convert("UTC").to_numpy(dtype="datetime64[us]")  # numbers, not Timestamps
    run_ids, phases = frame["run_id"].to_numpy(dtype=object), frame["phase"].to_numpy(dtype=object)
    phase_ids = frame["phase_id"].to_numpy(dtype=object) if "phase_id" in frame.columns else np.full(len(frame), None)
    forked = frame[FORKED_FROM].to_numpy(dtype=object) if FORKED_FROM in frame.columns else np.full(len(frame), None)
    names = frame[TAPE_NAME].to_numpy(dtype=object) if TAPE_NAME in frame.columns else np.full(len(frame), None)
    metas = frame["meta"].to_numpy(dtype=object) if "meta" in frame.columns else np.full(len(frame), None)
    rows: dict[tuple[Any, str], dict[str, Any]] = {}
    pending: dict[Any, list[str]] = {}  # per tape, the call ids of the last tool_call entry, in order
    for row in at:
        kind, payload, tape = kinds[row], payloads[row], tapes[row]
        if kind == "tool_call" or (kind == "message" and isinstance(payload.get("tool_calls"), list)):
            calls = payload.get("calls") if kind == "tool_call" else payload.get("tool_calls")
            mcp = metas[row].get("mcp") if isinstance(metas[row], dict) else None
            ids = []
            for index, call in enumerate(calls if isinstance(calls, list) else []):
                if not isinstance(call, dict):
                    continue
                found = call.get("function")
                function: dict[str, Any] = found if isinstance(found, dict) else {}
                name = str(function.get("name", ""))
                call_id = str(call.get("id") or f"{row}-{index}")
                wire, dotted = spellings(name, mcp.get(call_id) if isinstance(mcp, dict) else None)
                rows[(tape, call_id)] = {
                    TAPE_NAME: names[row], "call_id": call_id, "run_id": run_ids[row], "phase": phases[row],
                    "phase_id": phase_ids[row], "tool": name, "tool_wire": wire, "tool_dotted": dotted,
                    "arguments": _arguments(function.get("arguments")), "called": dates[row], "answered": None,
                    "ok": None, "error_kind": None, "error_message": None, "result": None,
                    FORKED_FROM: forked[row],
                }  # fmt: skip
                ids.append(call_id)
            pending[tape] = ids
        elif kind == "tool_result":
            results = payload.get("results")
            for call_id, result in zip(
                pending.pop(tape, []), results if isinstance(results, list) else [], strict=False
            ):
                _answer(rows.get((tape, call_id)), result, dates[row])
        elif kind == "message" and payload.get("role") == "tool":
            _answer(rows.get((tape, str(payload.get("tool_call_id")))), payload.get("content"), dates[row])
        elif kind == "error":
            details = payload.get("details")
            failed = details.get("call_id") if isinstance(details, dict) else None
            named = rows.get((tape, str(failed))) if failed is not None else None
            if named is not None:
                named["ok"], named["error_kind"] = False, payload.get("kind")
                named["error_message"] = payload.get("message")
    out = pd.DataFrame(list(rows.values()), columns=[c for c in CALL_COLUMNS if c != "seconds"], dtype=object)
    for column in out.columns.difference(_NOT_TEXT):  # text as the frame's text columns are, lone surrogates too
        out[column] = text_column(out[column].tolist())
    out["ok"] = out["ok"].astype("boolean")
    out["called"] = pd.to_datetime(out["called"].to_numpy(), utc=True)
    out["answered"] = pd.to_datetime(out["answered"].to_numpy(), utc=True)
    out.insert(CALL_COLUMNS.index("seconds"), "seconds", (out["answered"] - out["called"]).dt.total_seconds())
    out["phase_id"] = pd.array(out["phase_id"].tolist(), dtype="Int64")
    return out


def _answer(row: dict[str, Any] | None, result: Any, date: Any) -> None:
    if row is None:
        return
    row["answered"], row["result"] = date, result
    failure = _failure(result)
    if failure is not None:
        row["ok"], (row["error_kind"], row["error_message"]) = False, failure
    elif row["ok"] is None:
        row["ok"] = True
