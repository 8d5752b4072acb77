"""simonw/llm's log database (``logs.db``) as tape entries.

llm 0.30 and later keep conversations as ``threads`` of content-addressed ``messages`` (each with its
``parts``: text, reasoning, tool calls and results, attachments) and one ``turns`` row per model call
(model, tokens, duration, time). Each thread becomes a phase: an anchor ``conversation`` with the
thread's id and name, then its messages in order, a ``run`` event closing each turn. Databases
written by older versions hold ``conversations`` and ``responses`` (with ``tool_calls`` and
``tool_results``) instead, read the same way; a database llm upgraded holds both, and its threads and older
conversations come in the order they began. Attachments are content parts of their prompt
(``llm_attachments``). Rows of other tables are kept whole.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from contextlib import closing
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, Final

from bub_nb.imports.draft import RECORD_EVENT_PREFIX, TapeDraft
from bub_nb.imports.llm_attachments import Attachments
from bub_nb.imports.records import connect, other_rows, rows
from bub_nb.imports.values import iso_date, mapping, openai_usage, with_details

FORMAT: Final = "llm"
CONVERSATION_ANCHOR: Final = "conversation"
THREAD_TABLES: Final = {"threads", "turns", "messages", "parts", "fragments", "attachments", "tools"}
LEGACY_TABLES: Final = {"conversations", "responses", "tool_calls", "tool_results"}
DERIVED_TABLES: Final = {
    "_llm_migrations", "turn_search", "message_tree", "part_fragments", "part_attachments", "prompt_attachments",
}  # fmt: skip
"""Bookkeeping llm derives from the log (its migrations, search index, reference tables), not records of it."""


def looks_like(tables: set[str]) -> bool:
    return (
        "_llm_migrations" in tables
        or {"threads", "turns", "messages", "parts"} <= tables
        or ({"conversations", "responses"} <= tables)
    )


def read(path: Path, draft: TapeDraft) -> dict[str, Any]:
    """Add every thread (and every legacy conversation) of the database to ``draft``."""
    with closing(connect(path)) as db:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        attachments = Attachments(db, draft) if "attachments" in tables else None
        threads = _threads(db, draft, attachments) if {"threads", "turns", "messages", "parts"} <= tables else []
        legacy = _legacy(db, draft, attachments) if {"conversations", "responses"} <= tables else []
        # A database llm 0.30 or later upgraded holds both, the older conversations in the legacy tables: by date.
        for _, add in sorted([*legacy, *threads], key=lambda phase: phase[0]):
            add()
        if attachments is not None:
            attachments.keep_unnamed()
        if "tools" in tables:
            for tool in rows(db, "SELECT * FROM tools ORDER BY id"):
                draft.take(tool, "tool")
                keys = ("name", "description", "input_schema", "plugin")
                draft.event(RECORD_EVENT_PREFIX + "tool", {key: tool.get(key) for key in keys})
        for table, row in other_rows(db, THREAD_TABLES | LEGACY_TABLES | DERIVED_TABLES):
            draft.take(row, table)
            draft.keep(f"llm table {table!r} is not part of the conversations this reading knows")
        cut = db.cut
    return {"threads": len(threads), "legacy_conversations": len(legacy), **({"cut_values": cut} if cut else {})}


Phase = tuple[datetime, Callable[[], None]]
"""A conversation to add, and when it began: threads and legacy conversations are added in date order."""


def _when(value: Any) -> datetime:
    found = iso_date(value)
    return datetime.fromisoformat(found) if found else datetime.min.replace(tzinfo=UTC)


def _threads(db: sqlite3.Connection, draft: TapeDraft, attachments: Attachments | None) -> list[Phase]:
    phases: list[Phase] = []
    for thread in rows(db, "SELECT * FROM threads ORDER BY datetime_utc, id"):
        turns = rows(db, "SELECT * FROM turns WHERE thread_id = ? ORDER BY datetime_utc, id", thread["id"])
        first = turns[0]["datetime_utc"] if turns else thread.get("datetime_utc")
        phases.append((_when(first), partial(_thread, db, draft, attachments, thread, turns, first)))
    return phases


def _thread(
    db: sqlite3.Connection,
    draft: TapeDraft,
    attachments: Attachments | None,
    thread: dict[str, Any],
    turns: list[dict[str, Any]],
    first: Any,
) -> None:
    draft.take(thread, "thread", first)
    state = {"thread": thread["id"], "name": thread.get("name"), "forked_from": thread.get("forked_from")}
    draft.anchor(CONVERSATION_ANCHOR, state)
    seen: set[str] = set()
    for turn in turns:
        for message in _chain(db, turn["tip_message_hash"]):
            if message["hash"] in seen:
                continue
            seen.add(message["hash"])
            draft.take(message, f"message/{message['role']}", turn["datetime_utc"])
            if not _message(draft, message, _parts(db, message["hash"]), turn["id"], attachments):
                draft.keep(f"an llm message with role {message['role']!r} and no part this reading knows")
        draft.take(turn, "turn", turn["datetime_utc"])
        _run(draft, turn)


def _chain(db: sqlite3.Connection, tip: str | None) -> list[dict[str, Any]]:
    """The messages from the thread's first to ``tip``, oldest first (as llm's own ``load_chain`` walks them)."""
    chain: list[dict[str, Any]] = []
    while tip is not None:
        found = rows(db, "SELECT * FROM messages WHERE hash = ?", tip)
        if not found:
            break
        chain.append(found[0])
        tip = found[0]["parent_hash"]
    return chain[::-1]


def _parts(db: sqlite3.Connection, message: str) -> list[dict[str, Any]]:
    parts = []
    for row in rows(db, "SELECT * FROM parts WHERE message_hash = ? ORDER BY position", message):
        payload = json.loads(row["payload"]) if row.get("payload") else {}
        payload["type"] = row["type"]
        if row.get("text") is not None:
            payload["text"] = row["text"]
        pieces = payload.pop("text_ref", None)
        if pieces is not None:  # text stored as references to shared fragments
            payload["text"] = "".join(_piece(db, piece) for piece in pieces)
        parts.append(payload)
    return parts


def _piece(db: sqlite3.Connection, piece: dict[str, Any]) -> str:
    if "literal" in piece:
        return str(piece["literal"])
    found = rows(db, "SELECT content FROM fragments WHERE id = ?", piece.get("fragment"))
    return str(found[0]["content"]) if found else ""


def _message(
    draft: TapeDraft, message: dict[str, Any], parts: list[dict[str, Any]], turn: str, attachments: Attachments | None
) -> bool:
    role = message["role"]
    texts = [p["text"] for p in parts if p["type"] == "text" and isinstance(p.get("text"), str)]
    reasoning = [p["text"] for p in parts if p["type"] == "reasoning" and p.get("text")]
    meta: dict[str, Any] = {"hash": message["hash"], "run_id": turn}
    if reasoning:
        meta["reasoning"] = "\n\n".join(reasoning)
    text = "\n\n".join(texts)
    calls = [p for p in parts if p["type"] == "tool_call"]
    results = [p for p in parts if p["type"] == "tool_result"]
    for index, call in enumerate(calls):
        draft.call(
            str(call.get("tool_call_id") or ""), str(call.get("name")), call.get("arguments"),
            text=text if index == 0 else "", **(meta if index == 0 else {}),
        )  # fmt: skip
    for result in results:
        output = result.get("output")
        failed = bool(result.get("exception"))
        draft.result(str(result.get("tool_call_id") or ""), result.get("exception") if failed else output, error=failed)
    if calls or (results and not texts):
        return True
    if role == "system":
        draft.system(text, **meta)
    elif role in ("user", "assistant"):
        named = [mapping(p.get("attachment")).get("id") for p in parts if p["type"] == "attachment"]
        if named and attachments is not None:
            sent, records = attachments.parts(named)
            meta["records"] = [draft.record, *records]
            draft.message({"role": role, "content": [*_text_parts(texts), *sent]}, **meta)
        else:
            draft.message({"role": role, "content": text}, **meta)
    else:
        return False
    return True


def _text_parts(texts: list[str]) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text} for text in texts]


def _run(draft: TapeDraft, turn: dict[str, Any]) -> None:
    details = json.loads(turn["token_details"]) if turn.get("token_details") else None
    # llm keeps what OpenAI's usage says beyond the two counts, in its shape: prompt_tokens_details.cached_tokens
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    usage = with_details(openai_usage(turn.get("input_tokens"), turn.get("output_tokens"), cached=cached), details)
    model = turn.get("resolved_model") or turn.get("model")
    extra = {"token_details": details} if details else {}
    draft.run(usage, model, run_id=turn["id"], elapsed_ms=turn.get("duration_ms"), **extra)


def _legacy(db: sqlite3.Connection, draft: TapeDraft, attachments: Attachments | None) -> list[Phase]:
    """Conversations logged by llm before 0.30: one ``responses`` row per prompt and answer."""
    conversations = rows(db, "SELECT * FROM conversations")
    responses = rows(db, "SELECT * FROM responses ORDER BY datetime_utc, id")
    by_conversation: dict[Any, list[dict[str, Any]]] = {}
    for response in responses:
        by_conversation.setdefault(response.get("conversation_id"), []).append(response)
    calls = _by_response(db, "tool_calls")
    results = _by_response(db, "tool_results")
    known = {conversation["id"] for conversation in conversations}
    orphans = [{"id": key, "name": None} for key in by_conversation if key not in known]
    ordered = sorted([*conversations, *orphans], key=lambda c: _first_date(by_conversation.get(c["id"], [])))
    prompts = _prompt_attachments(db)

    def add(conversation: dict[str, Any]) -> None:
        answers = by_conversation.get(conversation["id"], [])
        if conversation in orphans:
            draft.take({"id": conversation["id"]}, "conversation", _first_date(answers))
        else:
            draft.take(conversation, "conversation", _first_date(answers))
        state = {
            "conversation": conversation["id"],
            "name": conversation.get("name"),
            "model": conversation.get("model"),
        }
        draft.anchor(CONVERSATION_ANCHOR, state)
        for response in answers:
            sent = attachments.parts(prompts.get(response["id"], [])) if attachments is not None else ([], [])
            _legacy_response(draft, response, calls.get(response["id"], []), results.get(response["id"], []), sent)

    return [
        (_when(_first_date(by_conversation.get(conversation["id"], []))), partial(add, conversation))
        for conversation in ordered
    ]


def _prompt_attachments(db: sqlite3.Connection) -> dict[Any, list[Any]]:
    """The attachments of each legacy response's prompt, in order."""
    found: dict[Any, list[Any]] = {}
    try:
        for row in rows(db, 'SELECT * FROM prompt_attachments ORDER BY response_id, "order"'):
            found.setdefault(row.get("response_id"), []).append(row.get("attachment_id"))
    except sqlite3.OperationalError:
        return {}
    return found


def _by_response(db: sqlite3.Connection, table: str) -> dict[Any, list[dict[str, Any]]]:
    found: dict[Any, list[dict[str, Any]]] = {}
    try:
        for row in rows(db, f"SELECT * FROM {table} ORDER BY id"):
            found.setdefault(row.get("response_id"), []).append(row)
    except sqlite3.OperationalError:
        return {}
    return found


def _first_date(responses: list[dict[str, Any]]) -> str:
    dates = [iso_date(r.get("datetime_utc")) for r in responses]
    return min((d for d in dates if d), default="")


def _legacy_response(
    draft: TapeDraft,
    response: dict[str, Any],
    calls: list[dict[str, Any]],
    results: list[dict[str, Any]],
    sent: tuple[list[dict[str, Any]], list[int]],
) -> None:
    number = draft.take(response, "response", response.get("datetime_utc"))
    meta = {"run_id": response["id"]}
    if response.get("system"):
        draft.system(response["system"], **meta)
    for result in results:  # the results of the previous answer's calls went out with this prompt
        draft.take(result, "tool_result")
        draft.result(str(result.get("tool_call_id") or ""), result.get("output"), error=bool(result.get("exception")))
    draft.focus(number)
    parts, records = sent
    if parts:
        text = _text_parts([response["prompt"]]) if response.get("prompt") else []
        draft.message({"role": "user", "content": [*text, *parts]}, records=[number, *records], **meta)
    elif response.get("prompt"):
        draft.message({"role": "user", "content": response["prompt"]}, **meta)
    for index, call in enumerate(calls):
        draft.take(call, "tool_call")
        draft.call(str(call.get("tool_call_id") or ""), str(call.get("name")), call.get("arguments"),
                   text=(response.get("response") or "") if index == 0 else "", **meta)  # fmt: skip
    draft.focus(number)
    if not calls and response.get("response") is not None:
        draft.message({"role": "assistant", "content": response["response"]}, **meta)
    details = _json(response.get("token_details"))
    usage = with_details(openai_usage(response.get("input_tokens"), response.get("output_tokens")), details)
    extra = {"token_details": details} if details else {}
    draft.run(usage, response.get("model"), run_id=response["id"], elapsed_ms=response.get("duration_ms"), **extra)


def _json(text: Any) -> Any:
    try:
        return json.loads(text) if isinstance(text, str) and text else None
    except ValueError:
        return None
