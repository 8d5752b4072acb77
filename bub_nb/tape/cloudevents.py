"""Bub's next tape format, read: one structured CloudEvents 1.0 event per line, its ``data`` an ATIF step.

Bub's main branch (``rfcs/0001_standard_driven_bub.md``, ``src/bub/tape.py``) writes a tape as JSONL lines of
structured CloudEvents (``specversion``, ``id``, ``source``, ``type``, ``time``, ``bub*`` extensions, ``data``). The
type is ``build.bub.<name>.v<version>``; the data is an ATIF StepObject (``step_id``, ``source`` ``system`` / ``user``
/ ``agent``, ``message``, and on agent steps ``tool_calls``, ``observation``, ``model_name``, ``metrics``). A line's
position is its cursor. A line is told from the current format by its ``specversion`` key.

The steps become entries of the current format, in order, numbered from 1:

- ``build.bub.message.v1``: a ``message`` (``user`` steps as the user's, ``system`` as the system's, ``agent`` as
  the assistant's); an agent step with ``tool_calls`` is a ``tool_call`` entry (its text the calls' ``content``),
  and its ``observation`` a ``tool_result`` after it, one result per observation, in order.
- ``build.bub.context.anchor.v1``: an ``anchor`` with the ``name`` and ``state`` the step's observation holds.
- ``build.bub.error.v1``: an ``error`` with the ``kind``, ``message`` and ``details`` its observation holds.
- any other ``build.bub.<name>.v1``: an ``event`` named ``<name>`` whose data is the observation's JSON.

Each entry's ``meta`` keeps the event's ``id`` and ``type`` (``cloudevent``), its cursor, and its ``bub*`` extensions
under ``bub`` (``bubcontext: false``, Bub's mark of a runtime fact, also becomes ``context: false``: hidden from
views, as Bub hides it from prompts). The date is the event's ``time``. Not read: events of other versions or of
sources other than Bub's types (kept as ``event`` entries named by their type), ATIF ``reasoning_content``,
``extra`` beyond Bub's message fields, and binary data (``data_base64``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bub_nb.tape.entries import TapeEntry

SPECVERSION = "specversion"
BUB_TYPE_PREFIX = "build.bub."

_ROLES = {"user": "user", "system": "system", "agent": "assistant"}


@dataclass
class CloudEventsRead:
    """What a CloudEvents tape's lines gave: its entries, and the lines that were no Bub event (1-based)."""

    entries: list[TapeEntry] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)


def is_cloudevent_line(line: str | bytes) -> bool:
    """Whether a line is a structured CloudEvent (a JSON object with ``specversion``), not a current-format entry."""
    try:
        record = json.loads(line)
    except ValueError:
        return False
    return isinstance(record, dict) and SPECVERSION in record


def bub_event_name(event_type: str) -> tuple[str, int] | None:
    """``build.bub.<name>.v<version>`` as ``(name, version)``; ``None`` for a type that is not Bub's."""
    if not event_type.startswith(BUB_TYPE_PREFIX):
        return None
    name, dot, version = event_type[len(BUB_TYPE_PREFIX) :].rpartition(".")
    if not dot or not name or not version.startswith("v") or not version[1:].isdigit():
        return None
    return name, int(version[1:])


def read_cloudevents(lines: Iterable[str | bytes]) -> CloudEventsRead:
    """The entries a CloudEvents tape's lines hold, numbered in order; blank lines pass, and a line that is not a
    structured CloudEvent with an object ``data`` is skipped and its number kept."""
    read = CloudEventsRead()
    for cursor, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError:
            read.skipped.append(cursor)
            continue
        if not isinstance(event, dict) or SPECVERSION not in event or not isinstance(event.get("data"), dict):
            read.skipped.append(cursor)
            continue
        for entry in _entries_of(event, cursor):
            read.entries.append(entry.with_id(len(read.entries) + 1))
    return read


def _entries_of(event: Mapping[str, Any], cursor: int) -> list[TapeEntry]:
    step: dict[str, Any] = event["data"]
    meta = _meta_of(event, cursor)
    date = str(event.get("time") or step.get("timestamp") or "")
    event_type = str(event.get("type") or "")
    named = bub_event_name(event_type)
    name = named[0] if named is not None and named[1] == 1 else None
    if name == "message":
        return [TapeEntry(0, kind, payload, meta, date) for kind, payload in _message_entries(step)]
    data = _observation_json(step)
    if name == "context.anchor" and isinstance(data, dict) and isinstance(data.get("name"), str):
        state = data.get("state")
        anchor = {"name": data["name"], "state": state if isinstance(state, dict) else {}}
        return [TapeEntry(0, "anchor", anchor, meta, date)]
    if name == "error" and isinstance(data, dict):
        payload = {"kind": str(data.get("kind") or "error"), "message": str(data.get("message") or "")}
        if data.get("details") is not None:
            payload["details"] = data["details"]
        return [TapeEntry(0, "error", payload, meta, date)]
    return [TapeEntry(0, "event", {"name": name or event_type, "data": data}, meta, date)]


def _message_entries(step: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    role = _ROLES.get(str(step.get("source")), "user")
    content = _openai_content(step.get("message", ""))
    extra = step.get("extra")
    bub_extra = extra.get("bub") if isinstance(extra, dict) else None
    fields = bub_extra.get("message") if isinstance(bub_extra, dict) else None
    message = {**(fields if isinstance(fields, dict) else {}), "role": role, "content": content}
    calls = step.get("tool_calls") if role == "assistant" else None
    if not isinstance(calls, list) or not calls:
        entries: list[tuple[str, dict[str, Any]]] = [("message", message)]
    else:
        payload: dict[str, Any] = {"calls": [_openai_call(call, index) for index, call in enumerate(calls)]}
        if content:
            payload["content"] = content
        entries = [("tool_call", payload)]
    observation = step.get("observation")
    results = observation.get("results") if isinstance(observation, dict) else None
    if role == "assistant" and isinstance(results, list) and results:
        entries.append(("tool_result", {"results": [_result_of(result) for result in results]}))
    return entries


def _openai_call(call: Any, index: int) -> dict[str, Any]:
    call = call if isinstance(call, dict) else {}
    extra = call.get("extra")
    raw = extra.get("bub_raw_arguments") if isinstance(extra, dict) else None
    arguments = raw if isinstance(raw, str) else json.dumps(call.get("arguments", {}), ensure_ascii=False)
    return {
        "id": str(call.get("tool_call_id") or f"call-{index + 1}"),
        "type": "function",
        "function": {"name": str(call.get("function_name") or "unknown"), "arguments": arguments},
    }


def _result_of(result: Any) -> Any:
    if not isinstance(result, dict):
        return result
    content = result.get("content")
    if isinstance(content, str):
        return content
    return _openai_content(content) if isinstance(content, list) else json.dumps(content, ensure_ascii=False)


def _openai_content(message: Any) -> Any:
    """ATIF content as an OpenAI message's: text as it is, ``image`` parts back to ``image_url``."""
    if not isinstance(message, list):
        return "" if message is None else message if isinstance(message, str) else json.dumps(message)
    parts: list[dict[str, Any]] = []
    for part in message:
        if isinstance(part, dict) and part.get("type") == "image":
            source = part.get("source")
            url = source.get("path") if isinstance(source, dict) else None
            parts.append({"type": "image_url", "image_url": {"url": str(url or "")}})
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            parts.append({"type": "text", "text": part["text"]})
        else:
            parts.append({"type": "text", "text": json.dumps(part, ensure_ascii=False)})
    return parts


def _observation_json(step: Mapping[str, Any]) -> Any:
    """The JSON a system step's first observation holds (Bub's payload), else its text, else ``None``."""
    observation = step.get("observation")
    results = observation.get("results") if isinstance(observation, dict) else None
    if not isinstance(results, list) or not results or not isinstance(results[0], dict):
        return None
    content = results[0].get("content")
    if not isinstance(content, str):
        return content
    try:
        return json.loads(content)
    except ValueError:
        return content


def _meta_of(event: Mapping[str, Any], cursor: int) -> dict[str, Any]:
    extensions = {key: value for key, value in event.items() if key.startswith("bub")}
    meta: dict[str, Any] = {"cloudevent": {"id": event.get("id"), "type": event.get("type")}, "cursor": cursor}
    if extensions:
        meta["bub"] = extensions
    if extensions.get("bubcontext") is False:
        meta["context"] = False
    return meta
