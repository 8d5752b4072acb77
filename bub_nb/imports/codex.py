"""Codex CLI's rollout log (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``) as tape entries.

Each line is ``{timestamp, type, payload}``. ``response_item`` payloads are what the model saw and
said (Responses-API items: messages, function calls and their outputs, reasoning); ``event_msg``
payloads are the interface's copies of those and its lifecycle, with ``token_count`` carrying the
usage of each model call; ``turn_context`` names the model; ``compacted`` marks a compaction and
becomes an anchor, followed by its ``replacement_history``: what the model reads from then on.
Rollouts older than the ``payload`` wrapper hold the items on their own lines.

A sub-agent's rollout names its parent's session (``parent_thread_id``); its tape links to the parent's entry
holding the ``spawn_agent`` call that started it.

Codex repeats a ``token_count`` event with the same ``total_token_usage`` (after a rate-limit update, say):
only an event whose total moved is a model call, so the ``run`` events add up to Codex's own final total.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from bub_nb.imports.draft import RECORD_EVENT_PREFIX, TapeDraft
from bub_nb.imports.records import jsonl_records
from bub_nb.imports.responses import add_item, message_content
from bub_nb.imports.values import mapping, openai_usage

FORMAT: Final = "codex"
COMPACTION_ANCHOR: Final = "compaction"
ITEM_TYPES: Final = ("message", "function_call", "function_call_output", "reasoning", "custom_tool_call")
INTERFACE_EVENTS: Final = (
    "user_message", "agent_message", "agent_reasoning", "agent_reasoning_raw_content", "task_started",
    "task_complete", "turn_aborted", "entered_review_mode", "exited_review_mode", "context_compacted",
)  # fmt: skip


def looks_like(record: Any) -> bool:
    """Whether a decoded first record is a Codex rollout's."""
    if not isinstance(record, dict):
        return False
    if record.get("type") in ("session_meta", "turn_context", "response_item", "event_msg", "compacted"):
        return isinstance(record.get("payload"), dict)
    return "instructions" in record and "id" in record and "timestamp" in record  # the older header line


def read(records: Any, draft: TapeDraft) -> dict[str, Any]:
    """Add every record to ``draft``; returns what the log says of its session."""
    session: dict[str, Any] = {}
    state: dict[str, Any] = {"model": None, "turn": 0, "total": None}
    for record in draft.json_objects(records):
        kind = str(record.get("type"))
        payload = record.get("payload")
        if not isinstance(payload, dict):  # an older rollout: the item, or the header, is the line itself
            payload, kind = record, ("response_item" if kind in ITEM_TYPES else "session_meta")
            if "instructions" not in record and kind == "session_meta":
                kind = str(record.get("type"))
        draft.take(record, _type_name(kind, payload), record.get("timestamp"))
        if not _add(draft, kind, payload, session, state):
            draft.keep(f"Codex record {_type_name(kind, payload)!r} is not one this reading knows")
    return session


def _type_name(kind: str, payload: dict[str, Any]) -> str:
    inner = payload.get("type")
    return f"{kind}/{inner}" if kind in ("response_item", "event_msg") and isinstance(inner, str) else kind


def _add(draft: TapeDraft, kind: str, payload: dict[str, Any], session: dict[str, Any], state: dict[str, Any]) -> bool:
    meta = {"run_id": f"turn-{state['turn']}"} if state["turn"] else {}
    if kind == "session_meta":
        for key, field in (
            ("session", "id"),
            ("version", "cli_version"),
            ("cwd", "cwd"),
            ("parent", "parent_thread_id"),
        ):
            if key not in session and isinstance(payload.get(field), str):
                session[key] = payload[field]
        draft.event(RECORD_EVENT_PREFIX + "session", payload)
        return True
    if kind == "turn_context":
        state["turn"] += 1
        state["model"] = payload.get("model") or state["model"]
        draft.event(RECORD_EVENT_PREFIX + "turn_context", payload, run_id=f"turn-{state['turn']}")
        return True
    if kind == "compacted":
        _compacted(draft, payload, meta)
        return True
    if kind == "response_item":
        return add_item(draft, payload, **meta)
    if kind != "event_msg":
        return False
    event = payload.get("type")
    if event == "token_count":
        info = mapping(payload.get("info"))
        last = info.get("last_token_usage") if isinstance(info.get("last_token_usage"), dict) else None
        total = info.get("total_token_usage")
        if last is None or (total is not None and total == state["total"]):
            draft.event(RECORD_EVENT_PREFIX + "token_count", payload, **meta)  # no model call: a repeat
            return True
        state["total"] = total
        usage = openai_usage(
            last.get("input_tokens"), last.get("output_tokens"), last.get("total_tokens"),
            last.get("cached_input_tokens"),
        )  # fmt: skip
        draft.run(usage, state["model"], source_usage=last, thread="", run_id=meta.get("run_id"))
        return True
    if event in INTERFACE_EVENTS:
        draft.event(f"{RECORD_EVENT_PREFIX}{event}", payload, **meta)
        return True
    return False


def _compacted(draft: TapeDraft, payload: dict[str, Any], meta: dict[str, Any]) -> None:
    """The anchor, its summary (the record's message, or the history's last message when Codex left it empty),
    then every item of the history that replaced the conversation, as entries the next view starts with."""
    history = [item for item in payload.get("replacement_history") or () if isinstance(item, dict)]
    summary = payload.get("message")
    if not summary:
        texts = [message_content(i.get("content")) for i in history if i.get("type", "message") == "message"]
        summary = next((t for t in reversed(texts) if isinstance(t, str) and t), "")
    state = {"summary": summary, "from": FORMAT}
    if history:
        state["replacement_history"] = len(history)
    draft.anchor(COMPACTION_ANCHOR, state)
    for item in history:
        if not add_item(draft, item, compacted=True, **meta):
            draft.event(RECORD_EVENT_PREFIX + "compacted_item", item, compacted=True, **meta)


def parent_call(path: Path, session: dict[str, Any]) -> tuple[Path, str] | None:
    """For a sub-agent's rollout (its ``session_meta`` names a ``parent_thread_id``), the parent's rollout under
    the same sessions folder and the id of the ``spawn_agent`` call whose output names this agent."""
    parent, child = session.get("parent"), session.get("session")
    if not isinstance(parent, str) or not isinstance(child, str) or len(path.parents) < 4:
        return None
    for candidate in sorted(path.parents[3].glob(f"*/*/*/rollout-*{parent}.jsonl")):
        for record in jsonl_records(candidate):
            payload = mapping(record.get("payload")) if isinstance(record, dict) else {}
            output = payload.get("output")
            if payload.get("type") == "function_call_output" and isinstance(output, str) and child in output:
                return candidate, str(payload.get("call_id"))
    return None
