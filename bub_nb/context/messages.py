"""Tape entries to OpenAI chat messages, kept valid for the API whatever the slice."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from bub_nb.tape.entries import TapeEntry, is_phase_anchor
from bub_nb.tape.events import PROMPT_TOO_LONG, retracted_ids

Message = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Rendering:
    """Messages made from a run of entries.

    ``sources`` holds, for each message, the id of the entry it came from. ``dropped`` lists
    the entries whose messages were left out so the list stays valid for the API: tool results
    without their call, and calls whose results are missing.
    """

    messages: tuple[Message, ...]
    sources: tuple[int, ...]
    dropped: tuple[int, ...]


def anchor_message(name: str | None, state: Any) -> Message:
    """How a phase anchor reaches the model, worded as Bub words it."""
    return {"role": "assistant", "content": f"[Anchor created: {name}]: {json.dumps(state, ensure_ascii=False)}"}


def is_hidden(entry: TapeEntry) -> bool:
    """Entries marked ``meta.context == false`` never reach the model."""
    return entry.meta.get("context") is False


def without_refused_prompts(entries: Iterable[TapeEntry]) -> list[TapeEntry]:
    """``entries`` without the prompts of turns that ended because the prompt alone was over the window.

    Such a prompt stays on the tape, but sending it again would only overflow again, so a live view leaves
    it out; a past turn's view, rebuilt from the ids it recorded, is unchanged.
    """
    entries = list(entries)
    refused = {
        entry.meta.get("run_id")
        for entry in entries
        if entry.kind == "error" and entry.payload.get("kind") == PROMPT_TOO_LONG and entry.meta.get("run_id")
    }
    if not refused:
        return entries
    return [
        entry
        for entry in entries
        if not (entry.kind == "message" and entry.meta.get("run_id") in refused and entry.payload.get("role") == "user")
    ]


def without_retracted(entries: Iterable[TapeEntry]) -> tuple[list[TapeEntry], tuple[int, ...]]:
    """``entries`` without those the ``retract`` events among them took back, and the ids left out.

    A retraction is written after what it retracts, so any slice that reaches to the tape's end (every live
    view) holds the events that concern its entries. A past turn's view is rebuilt from its recorded ids
    alone, no events among them, so a later retraction leaves it as it was sent.
    """
    entries = list(entries)
    retracted = retracted_ids(entries)
    if not retracted:
        return entries, ()
    return [e for e in entries if e.id not in retracted], tuple(e.id for e in entries if e.id in retracted)


def render_entries(entries: Iterable[TapeEntry]) -> Rendering:
    """Map entries to messages by the rules of the design, then keep only a valid sequence."""
    pairs = list(_map_entries(entries))
    return _keep_valid(pairs)


def entries_to_messages(entries: Iterable[TapeEntry]) -> list[Message]:
    """Just the messages of :func:`render_entries`, as a list ready to send."""
    return list(render_entries(entries).messages)


def entry_message_count(entry: TapeEntry) -> int:
    """How many messages an entry can yield at most; the window reads back until it has enough."""
    if is_hidden(entry):
        return 0
    match entry.kind:
        case "message" | "tool_call":
            return 1
        case "anchor":
            return 1 if is_phase_anchor(entry.name) else 0
        case "tool_result":
            results = entry.payload.get("results")
            return len(results) if isinstance(results, list) else 0
    return 0


def _map_entries(entries: Iterable[TapeEntry]) -> Iterable[tuple[Message, int]]:
    pending: list[dict[str, Any]] = []
    for entry in entries:
        if is_hidden(entry):
            continue
        payload = entry.payload
        match entry.kind:
            case "anchor" if is_phase_anchor(entry.name):
                yield anchor_message(entry.name, payload.get("state")), entry.id
            case "message":
                yield dict(payload), entry.id
            case "tool_call":
                pending = _calls(payload.get("calls"))
                content = payload.get("content")
                text = content if isinstance(content, str) else ""
                if pending:
                    yield {"role": "assistant", "content": text, "tool_calls": pending}, entry.id
                elif text:
                    yield {"role": "assistant", "content": text}, entry.id
            case "tool_result":
                results = payload.get("results")
                for index, result in enumerate(results if isinstance(results, list) else ()):
                    yield _tool_message(result, pending[index] if index < len(pending) else None), entry.id
                pending = []


def _calls(value: Any) -> list[dict[str, Any]]:
    return [dict(call) for call in value if isinstance(call, dict)] if isinstance(value, list) else []


def _tool_message(result: Any, call: dict[str, Any] | None) -> Message:
    message: Message = {"role": "tool", "content": result_text(result)}
    if call is None:
        return message
    call_id = call.get("id")
    if isinstance(call_id, str) and call_id:
        message["tool_call_id"] = call_id
    function = call.get("function")
    name = function.get("name") if isinstance(function, dict) else None
    if isinstance(name, str) and name:
        message["name"] = name
    return message


def result_text(result: Any) -> str:
    """A tool's result as the text the model reads: strings as they are, anything else as JSON."""
    if isinstance(result, str):
        return result
    try:
        return json.dumps(result, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(result)


def _call_ids(message: Message) -> list[str | None] | None:
    """The ids an assistant message waits answers for; ``None`` when it calls no tools."""
    calls = message.get("tool_calls")
    if message.get("role") != "assistant" or not calls:
        return None
    if not isinstance(calls, list):
        return []
    return [call.get("id") if isinstance(call, dict) else None for call in calls]


def _keep_valid(pairs: list[tuple[Message, int]]) -> Rendering:
    """Drop what the API would refuse.

    An assistant message with ``tool_calls`` must be followed at once by one tool message per
    call id; anything short of that drops the call and its partial answers. Tool messages that
    follow no such call are orphans and are dropped too, as are messages without a role.
    """
    kept: list[tuple[Message, int]] = []
    dropped: list[int] = []
    index = 0
    while index < len(pairs):
        message, source = pairs[index]
        ids = _call_ids(message)
        if ids is None:
            if isinstance(message.get("role"), str) and message.get("role") != "tool":
                kept.append((message, source))
            else:
                dropped.append(source)
            index += 1
            continue
        end = index + 1
        while end < len(pairs) and pairs[end][0].get("role") == "tool":
            end += 1
        offsets = _answers(ids, pairs[index + 1 : end])
        if offsets is None:
            dropped.extend(source for _, source in pairs[index:end])
        else:
            answers = {index + 1 + offset for offset in offsets}
            kept.append((message, source))
            kept.extend(pairs[at] for at in sorted(answers))
            dropped.extend(pairs[at][1] for at in range(index + 1, end) if at not in answers)
        index = end
    return Rendering(
        tuple(m for m, _ in kept),
        tuple(s for _, s in kept),
        tuple(dict.fromkeys(dropped)),
    )


def _answers(ids: list[str | None], tools: list[tuple[Message, int]]) -> list[int] | None:
    """Offsets into ``tools`` of the first answer to each call id; ``None`` unless every call is answered."""
    wanted = [i for i in ids if isinstance(i, str) and i]
    if not wanted or len(wanted) != len(ids) or len(set(wanted)) != len(wanted):
        return None
    first: dict[str, int] = {}
    for offset, (message, _) in enumerate(tools):
        call_id = message.get("tool_call_id")
        if call_id in wanted and call_id not in first:
            first[call_id] = offset
    if len(first) != len(wanted):
        return None
    return list(first.values())
