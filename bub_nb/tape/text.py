"""What an entry says, as text a person reads: for search, DataFrames and displays.

Everything here works on an entry's kind and payload, so the entry record can render itself
with these functions without this module importing it back.
"""

from __future__ import annotations

import html
import json
from typing import Any, Protocol

import orjson

from bub_nb.markup import code_span, kind_class, markdown_text


class Entry(Protocol):
    """What the renderers read of an entry (``TapeEntry`` has all of it)."""

    @property
    def kind(self) -> str: ...

    @property
    def payload(self) -> dict[str, Any]: ...


def json_text(value: Any) -> str:
    """``value`` as compact JSON text, whatever a tape holds (lone surrogates, integers beyond 64 bits)."""
    try:
        return orjson.dumps(value, default=str).decode()
    except orjson.JSONEncodeError:  # a lone surrogate or an integer beyond 64 bits: the standard library writes both
        return json.dumps(value, default=str, ensure_ascii=False)


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # multimodal parts
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and "text" in p)
    return "" if content is None else json_text(content)


def payload_call_names(kind: str, payload: dict[str, Any]) -> list[str]:
    """The tool names of a ``tool_call`` payload, or of an assistant message's ``tool_calls``."""
    calls = payload.get("calls") if kind == "tool_call" else payload.get("tool_calls")
    if not isinstance(calls, list):
        return []
    return [str(_function(c).get("name", "")) for c in calls if isinstance(c, dict)]


def _function(call: dict[str, Any]) -> dict[str, Any]:
    function = call.get("function")
    return function if isinstance(function, dict) else {}


def tool_call_text(payload: dict[str, Any]) -> tuple[str, list[str]]:
    """A ``tool_call`` payload's text (its content, then ``name(arguments)`` per call) and its tool names."""
    calls = payload.get("calls")
    names: list[str] = []
    parts = [_content_text(payload.get("content"))]
    if isinstance(calls, list):
        for call in calls:
            if isinstance(call, dict):
                function = _function(call)
                name = function.get("name", "")
                names.append(str(name))
                parts.append(f"{name}({function.get('arguments', '')})")
    return "\n".join([part for part in parts if part]), names


def entry_text(entry: Entry) -> str:
    """The readable text of an entry: content, names, arguments, results or error messages."""
    return payload_text(entry.kind, entry.payload)


def payload_text(kind: str, payload: dict[str, Any]) -> str:
    """``entry_text`` for a kind and payload, without building the entry."""
    match kind:
        case "message":
            text = _content_text(payload.get("content"))
            names = payload_call_names(kind, payload)
            return text + ("\n" if text and names else "") + ", ".join(names)
        case "system":
            return _content_text(payload.get("content"))
        case "anchor":
            state = payload.get("state")
            return f"{payload.get('name', '')}" + (f" {json_text(state)}" if state else "")
        case "event":
            data = payload.get("data")
            return f"{payload.get('name', '')}" + (f" {json_text(data)}" if data is not None else "")
        case "tool_call":
            return tool_call_text(payload)[0]
        case "tool_result":
            results = payload.get("results")
            if not isinstance(results, list):
                return ""
            return "\n".join([r if isinstance(r, str) else json_text(r) for r in results])
        case "error":
            return f"{payload.get('kind', 'error')}: {payload.get('message', '')}"
    return json_text(payload)


def entry_role(entry: Entry) -> str | None:
    """The chat role an entry speaks in, when it has one."""
    return payload_role(entry.kind, entry.payload)


def payload_role(kind: str, payload: dict[str, Any]) -> str | None:
    """``entry_role`` for a kind and payload."""
    match kind:
        case "message":
            role = payload.get("role")
            return role if isinstance(role, str) else None
        case "system":
            return "system"
        case "tool_call" | "anchor":
            return "assistant"
        case "tool_result":
            return "tool"
    return None


def _label(kind: str, payload: dict[str, Any]) -> str:
    name = payload.get("name") if kind in ("anchor", "event") else None
    return name if isinstance(name, str) and name else payload_role(kind, payload) or ""


def payload_markdown(entry_id: int, kind: str, payload: dict[str, Any], date: str) -> str:
    """An entry as Markdown: its id, kind, name or role and date, then its text (cut at 2000 characters)."""
    text = payload_text(kind, payload)
    if len(text) > 2000:
        text = text[:2000] + " …"
    label = code_span(_label(kind, payload))
    return f"**#{entry_id} {markdown_text(kind)}** {label} · {markdown_text(date[:19])}\n\n{text}"


def payload_html(entry_id: int, kind: str, payload: dict[str, Any], date: str) -> str:
    """An entry as an HTML block, its text cut at 2000 characters."""
    label = html.escape(_label(kind, payload))
    text = html.escape(payload_text(kind, payload)[:2000])
    return (
        f'<div class="bub-entry {kind_class(kind, "bub-")}"><b>#{entry_id} {html.escape(kind)}</b> '
        f"<code>{label}</code> <small>{html.escape(date[:19])}</small>"
        f'<pre style="white-space:pre-wrap;margin:2px 0">{text}</pre></div>'
    )
