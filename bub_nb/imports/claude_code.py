"""Claude Code's session log (``~/.claude/projects/<folder>/<session>.jsonl``) as tape entries.

A ``user`` record is the user's text or the results of tools; an ``assistant`` record is one content
block of a model reply (text, thinking or a ``tool_use``), the reply's usage repeated on each. A
``system`` record of subtype ``compact_boundary`` marks a compaction and becomes an anchor; the
summary Claude Code writes after it stays a user message, as the model read it. A ``summary``
record (the session's title) becomes an anchor too. Sub-agent records (``isSidechain``) beside a main
conversation are kept hidden from the model's view, so the main conversation stays the one a view sends; in a
sub-agent's own file (``subagents/agent-*.jsonl``) they are the conversation.
"""

from __future__ import annotations

from typing import Any, Final

from bub_nb.imports.draft import TapeDraft
from bub_nb.imports.values import mapping, openai_usage

FORMAT: Final = "claude-code"
COMPACTION_ANCHOR: Final = "compaction"
SUMMARY_ANCHOR: Final = "summary"
TYPES: Final = ("user", "assistant", "system", "summary")
USER_BLOCKS: Final = ("text", "image", "tool_result")
ASSISTANT_BLOCKS: Final = ("text", "thinking", "tool_use")


def looks_like(record: Any) -> bool:
    """Whether a decoded first record is Claude Code's."""
    if not isinstance(record, dict):
        return False
    if record.get("type") in ("user", "assistant", "system") and "sessionId" in record:
        return True
    return record.get("type") in ("summary", "file-history-snapshot", "queue-operation") and (
        "leafUuid" in record or "sessionId" in record or "messageId" in record
    )


def read(records: Any, draft: TapeDraft) -> dict[str, Any]:
    """Add every record to ``draft``; returns what the log says of its session."""
    session: dict[str, Any] = {}
    usage_seen: set[str] = set()
    records = list(records)
    # A sub-agent's own file (every record a sidechain) is that agent's conversation: nothing is hidden in it.
    main = any(
        isinstance(r, dict) and r.get("type") in ("user", "assistant") and not r.get("isSidechain") for r in records
    )
    for record in draft.json_objects(records):
        kind = record.get("type")
        draft.take(record, str(kind), record.get("timestamp"))
        for key, field in (("session", "sessionId"), ("version", "version"), ("cwd", "cwd")):
            if key not in session and isinstance(record.get(field), str):
                session[key] = record[field]
        if kind not in TYPES or not _add(draft, record, usage_seen, hide_sidechains=main):
            draft.keep(f"Claude Code record type {kind!r} is not part of the conversation this reading knows")
    return session


def _add(draft: TapeDraft, record: dict[str, Any], usage_seen: set[str], *, hide_sidechains: bool) -> bool:
    kind = record["type"]
    meta: dict[str, Any] = {}
    if isinstance(record.get("uuid"), str):
        meta["uuid"] = record["uuid"]
    thread = ""
    if record.get("isSidechain") and hide_sidechains:
        thread = f"sidechain:{record.get('agentId') or ''}"
        meta.update(sidechain=True, context=False)
    elif record.get("isSidechain"):
        meta["sidechain"] = True
    if kind == "summary":
        if not isinstance(record.get("summary"), str):
            return False
        draft.anchor(SUMMARY_ANCHOR, {"summary": record["summary"], "leaf_uuid": record.get("leafUuid")}, **meta)
        return True
    if kind == "system":
        if record.get("subtype") == "compact_boundary":
            details = mapping(record.get("compactMetadata"))
            state = {"trigger": details.get("trigger"), "pre_tokens": details.get("preTokens"), "from": FORMAT}
            draft.anchor(COMPACTION_ANCHOR, state, thread=thread, **meta)
        else:
            data = {key: record.get(key) for key in ("subtype", "level", "content") if key in record}
            draft.event("import.system", data, **meta)
        return True
    message = record.get("message")
    if not isinstance(message, dict):
        return False
    if kind == "user":
        return _user(draft, record, message, thread, meta)
    return _assistant(draft, record, message, thread, meta, usage_seen)


def _user(draft: TapeDraft, record: dict[str, Any], message: dict[str, Any], thread: str, meta: dict[str, Any]) -> bool:
    content = message.get("content")
    if record.get("isCompactSummary"):
        meta["compact_summary"] = True
    if record.get("isMeta"):
        meta["meta_message"] = True
    if isinstance(content, str):
        draft.message({"role": "user", "content": content}, thread=thread, **meta)
        return True
    if not isinstance(content, list):
        return False
    parts: list[dict[str, Any]] = []
    other = [b for b in content if not (isinstance(b, dict) and b.get("type") in USER_BLOCKS)]
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "tool_result":
            output = _result_content(block.get("content"))
            failed = block.get("is_error") is True
            draft.result(str(block.get("tool_use_id")), output, error=failed, thread=thread, **meta)
        elif block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append({"type": "text", "text": block["text"]})
        elif block.get("type") == "image":
            parts.append(_image(block))
    results = any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    if not parts and not results:
        return False  # nothing this reading knows: the record is kept whole
    if parts:
        text_only = all(part["type"] == "text" for part in parts)
        body: Any = "\n\n".join(part["text"] for part in parts) if text_only else parts
        draft.message({"role": "user", "content": body}, thread=thread, **({"blocks": other} if other else {}), **meta)
    elif other:
        draft.event("import.content", {"blocks": other}, **meta)
    return True


def _assistant(
    draft: TapeDraft,
    record: dict[str, Any],
    message: dict[str, Any],
    thread: str,
    meta: dict[str, Any],
    usage_seen: set[str],
) -> bool:
    content = message.get("content")
    blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    if isinstance(content, str):
        blocks = [{"type": "text", "text": content}]
    run_id = record.get("requestId") or message.get("id")
    if isinstance(run_id, str):
        meta["run_id"] = run_id
    text = "\n\n".join(b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str))
    thinking = [b.get("thinking") for b in blocks if b.get("type") == "thinking"]
    calls = [b for b in blocks if b.get("type") == "tool_use"]
    other = [b for b in blocks if b.get("type") not in ASSISTANT_BLOCKS]
    if not (text or thinking or calls):
        return False  # nothing this reading knows: the record is kept whole
    if other:
        meta["blocks"] = other  # blocks this reading does not know (server tools, say) stay on the entry
    if thinking:
        meta["reasoning"] = "\n\n".join(t for t in thinking if isinstance(t, str))
    if calls:
        for index, call in enumerate(calls):
            extra: dict[str, Any] = (
                meta if index == 0 else {k: meta[k] for k in ("run_id", "sidechain", "context") if k in meta}
            )
            draft.call(
                str(call.get("id")), str(call.get("name")), call.get("input"),
                text=text if index == 0 else "", thread=thread, **extra,
            )  # fmt: skip
    elif text:
        draft.message({"role": "assistant", "content": text}, thread=thread, **meta)
    elif thinking:
        draft.event("import.reasoning", {"text": meta.pop("reasoning")}, **meta)
    else:
        return False
    usage = message.get("usage")
    key = message.get("id") or run_id
    if isinstance(usage, dict) and key not in usage_seen:
        usage_seen.add(str(key))
        cache_read = usage.get("cache_read_input_tokens") or 0
        cache_write = usage.get("cache_creation_input_tokens") or 0
        prompt = (usage.get("input_tokens") or 0) + cache_read + cache_write
        draft.run(
            openai_usage(prompt, usage.get("output_tokens"), cached=cache_read),
            message.get("model"), run_id=meta.get("run_id"), source_usage=usage,
        )  # fmt: skip
    return True


def _result_content(content: Any) -> Any:
    """A ``tool_result`` block's content: its text, or the blocks themselves when they are more than text."""
    if isinstance(content, list):
        texts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        if len(texts) == len(content) and all(isinstance(t, str) for t in texts):
            return "\n\n".join(texts)  # type: ignore[arg-type]
        return content
    return content if content is not None else ""


def _image(block: dict[str, Any]) -> dict[str, Any]:
    source = mapping(block.get("source"))
    if source.get("type") == "base64":
        url = f"data:{source.get('media_type')};base64,{source.get('data')}"
        return {"type": "image_url", "image_url": {"url": url}}
    return {"type": "image_url", "image_url": {"url": source.get("url", "")}}
