"""Claude Code's session log (``~/.claude/projects/<folder>/<session>.jsonl``) as tape entries.

A ``user`` record is the user's text or the results of tools; an ``assistant`` record is one content
block of a model reply (text, thinking or a ``tool_use``), the reply's usage repeated on each. A
``system`` record of subtype ``compact_boundary`` marks a compaction and becomes an anchor; the
summary Claude Code writes after it stays a user message, as the model read it. A ``summary``
record (the session's title) becomes an anchor too. Sub-agent records (``isSidechain``) beside a main
conversation are kept hidden from the model's view, so the main conversation stays the one a view sends; in a
sub-agent's own file (``<session>/subagents/agent-*.jsonl``) they are the conversation, and its tape is its own,
named for the agent, linked to the entry of the parent's tape holding the call that started it.

One reply is several records; the usage on its last record is the reply's (the earlier ones hold the counts
at the time they were written).
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from bub_nb.imports.draft import TapeDraft
from bub_nb.imports.records import jsonl_records
from bub_nb.imports.values import anthropic_image, anthropic_result, mapping, openai_usage

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


@dataclass
class _Reply:
    """One model reply, which Claude Code writes as one record per content block while it streams."""

    last: int
    """The position of the reply's last record: its usage is the reply's final one (earlier records hold the
    counts at the time they were written, which grow as the reply streams)."""
    calls: int
    """The ``tool_use`` blocks of the whole reply."""
    seen: int = 0
    texts: list[str] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)
    records: list[int] = field(default_factory=list)


def read(records: Any, draft: TapeDraft) -> dict[str, Any]:
    """Add every record to ``draft``; returns what the log says of its session."""
    session: dict[str, Any] = {}
    records = list(records)
    # A sub-agent's own file (every record a sidechain) is that agent's conversation: nothing is hidden in it.
    main = any(
        isinstance(r, dict) and r.get("type") in ("user", "assistant") and not r.get("isSidechain") for r in records
    )
    replies = _replies(records)
    agents = _sidechain_agents(records) if main else {}
    position = -1
    for record in draft.json_objects(records):
        position = records.index(record, position + 1)
        kind = record.get("type")
        draft.take(record, str(kind), record.get("timestamp"))
        for key, field_name in (("session", "sessionId"), ("version", "version"), ("cwd", "cwd")):
            if key not in session and isinstance(record.get(field_name), str):
                session[key] = record[field_name]
        if not main and isinstance(record.get("agentId"), str) and record.get("isSidechain"):
            session.setdefault("agent", record["agentId"])
        if kind not in TYPES or not _add(draft, record, replies, position, agent=agents.get(position)):
            draft.keep(f"Claude Code record type {kind!r} is not part of the conversation this reading knows")
    return session


def _reply_key(record: dict[str, Any]) -> str | None:
    message = record.get("message")
    if record.get("type") != "assistant" or not isinstance(message, dict):
        return None
    key = message.get("id") or record.get("requestId") or record.get("uuid")
    return key if isinstance(key, str) else None


def _replies(records: list[Any]) -> dict[str, _Reply]:
    """Each reply's last record and number of calls, read ahead: a reply's records are not always together."""
    replies: dict[str, _Reply] = {}
    for position, record in enumerate(records):
        key = _reply_key(record) if isinstance(record, dict) else None
        if key is None:
            continue
        content = record["message"].get("content")
        blocks = content if isinstance(content, list) else ()
        calls = sum(1 for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use")
        reply = replies.setdefault(key, _Reply(position, 0))
        reply.last, reply.calls = position, reply.calls + calls
    return replies


def _sidechain_agents(records: list[Any]) -> dict[int, str]:
    """The sub-agent of each sidechain record, by position, so one agent's records are one thread however they
    interleave. Claude Code names the agent (``agentId``) on some records only (a tool's result, not the reply
    that called it): a record without one is the agent's of its chain (``parentUuid`` links), else the log's only."""
    chains: dict[str, str] = {}  # a record's uuid to the first of its chain (a parent is written before its child)
    named: dict[str, str] = {}  # a chain to the agent one of its records names
    found: dict[int, str] = {}
    for position, record in enumerate(records):
        if isinstance(record, dict) and record.get("isSidechain"):
            own, parent = str(record.get("uuid") or f"#{position}"), record.get("parentUuid")
            chain = chains[own] = chains.get(parent, own) if isinstance(parent, str) else own
            if isinstance(record.get("agentId"), str) and record["agentId"]:
                named.setdefault(chain, record["agentId"])
            found[position] = chain
    only = next(iter(set(named.values()))) if len(set(named.values())) == 1 else ""
    return {position: named.get(chain, only) for position, chain in found.items()}


def _add(
    draft: TapeDraft, record: dict[str, Any], replies: dict[str, _Reply], position: int, *, agent: str | None
) -> bool:
    """One record; ``agent`` is the sub-agent hiding a sidechain record of a main log (``None`` in its own file)."""
    kind = record["type"]
    meta: dict[str, Any] = {}
    if isinstance(record.get("uuid"), str):
        meta["uuid"] = record["uuid"]
    thread = ""
    if record.get("isSidechain") and agent is not None:
        thread = f"sidechain:{agent}"
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
    key = _reply_key(record)
    reply = replies.get(key) if key is not None else None
    if reply is None:
        return False
    return _assistant(draft, record, message, thread, meta, reply, last=position == reply.last)


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
            output = anthropic_result(block.get("content"))
            failed = block.get("is_error") is True
            draft.result(str(block.get("tool_use_id")), output, error=failed, thread=thread, **meta)
        elif block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append({"type": "text", "text": block["text"]})
        elif block.get("type") == "image":
            parts.append(anthropic_image(block))
    results = any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    if not parts and not results:
        return False  # nothing this reading knows: the record is kept whole
    if parts:
        text_only = all(part["type"] == "text" for part in parts)
        body: Any = "\n\n".join(part["text"] for part in parts) if text_only else parts
        if other:
            meta["blocks"] = other
        draft.message({"role": "user", "content": body}, thread=thread, **meta)
    elif other:
        draft.event("import.content", {"blocks": other}, **meta)
    return True


def _assistant(
    draft: TapeDraft,
    record: dict[str, Any],
    message: dict[str, Any],
    thread: str,
    meta: dict[str, Any],
    reply: _Reply,
    *,
    last: bool,
) -> bool:
    """One record of a reply: its calls join the reply's one ``tool_call`` entry (with the reply's text before
    them) even when results or progress records came between; text without calls waits for the reply's last
    record; the ``run`` event, with the last record's usage, closes the reply after its calls' results."""
    content = message.get("content")
    blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    if isinstance(content, str):
        blocks = [{"type": "text", "text": content}]
    run_id = record.get("requestId") or message.get("id")
    if isinstance(run_id, str):
        meta["run_id"] = run_id
    text = "\n\n".join(b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str))
    thinking = [b["thinking"] for b in blocks if b.get("type") == "thinking" and isinstance(b.get("thinking"), str)]
    calls = [b for b in blocks if b.get("type") == "tool_use"]
    other = [b for b in blocks if b.get("type") not in ASSISTANT_BLOCKS]
    known = bool(text or thinking or calls)
    if other:
        meta["blocks"] = other  # blocks this reading does not know (server tools, say) stay on the entry
    if text:
        reply.texts.append(text)
    reply.thinking += thinking
    if known and (text or thinking) and not calls:
        reply.records.append(draft.record)
    for call in calls:
        reply.seen += 1
        if reply.thinking:
            meta["reasoning"] = "\n\n".join(reply.thinking)
        earlier = [number for number in reply.records if number != draft.record]
        draft.call(
            str(call.get("id")), str(call.get("name")), call.get("input"),
            text="\n\n".join(reply.texts), thread=thread, group=str(run_id), more=reply.seen < reply.calls,
            records=earlier, **meta,
        )  # fmt: skip
        meta = {k: meta[k] for k in ("run_id", "sidechain", "context") if k in meta}
        reply.texts, reply.thinking, reply.records = [], [], []
    if last:
        _close(draft, message, thread, meta, reply, calls=bool(calls))
    return known or (last and bool(reply.records))


def _close(
    draft: TapeDraft, message: dict[str, Any], thread: str, meta: dict[str, Any], reply: _Reply, *, calls: bool
) -> None:
    """The end of a reply: the text still waiting, and the ``run`` event with the reply's final usage."""
    numbers = [number for number in reply.records if number != draft.record]
    extra: dict[str, Any] = {"records": [*numbers, draft.record]} if numbers else {}
    if reply.thinking:
        meta["reasoning"] = "\n\n".join(reply.thinking)
    if reply.texts:
        after = reply.calls > 0  # text after a reply's calls comes once their results are in
        draft.message({"role": "assistant", "content": "\n\n".join(reply.texts)}, thread=thread, after_calls=after,
                      **extra, **meta)  # fmt: skip
    elif reply.thinking and not calls:
        draft.event("import.reasoning", {"text": meta.pop("reasoning")}, **extra, **meta)
    usage = message.get("usage")
    if isinstance(usage, dict):
        cache_read = usage.get("cache_read_input_tokens") or 0
        cache_write = usage.get("cache_creation_input_tokens") or 0
        prompt = (usage.get("input_tokens") or 0) + cache_read + cache_write
        draft.run(
            openai_usage(prompt, usage.get("output_tokens"), cached=cache_read),
            message.get("model"), run_id=meta.get("run_id"), source_usage=usage, thread=thread,
        )  # fmt: skip


def parent_call(path: Path, session: dict[str, Any]) -> tuple[Path, str] | None:
    """For a sub-agent's own file (``<session>/subagents/agent-<id>.jsonl``), the parent session's log and the
    id of the call that started the agent: from the ``.meta.json`` beside it, else from the parent's results."""
    agent, parent_session = session.get("agent"), session.get("session")
    if not isinstance(agent, str) or not isinstance(parent_session, str) or path.parent.name != "subagents":
        return None
    parent = path.parent.parent.with_name(f"{parent_session}.jsonl")
    if not parent.is_file():
        return None
    with contextlib.suppress(OSError, ValueError):
        call = json.loads(path.with_name(f"{path.stem}.meta.json").read_text(encoding="utf-8")).get("toolUseId")
        if isinstance(call, str):
            return parent, call
    for record in jsonl_records(parent):
        result = record.get("toolUseResult") if isinstance(record, dict) else None
        content = mapping(record.get("message")).get("content") if isinstance(record, dict) else None
        if isinstance(result, dict) and result.get("agentId") == agent and isinstance(content, list):
            ids = [b.get("tool_use_id") for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
            if ids and isinstance(ids[0], str):
                return parent, ids[0]
    return None
