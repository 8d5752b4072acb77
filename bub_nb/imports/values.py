"""A log's values as Bub's entries hold them: times, tool calls and their arguments, token usage, text."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

import orjson

_UTC_ISO = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|\+00:00)")
"""An ISO-8601 time in UTC, as Bub's ``date`` is: a log's own such text is kept as it is."""


def entry_date(value: Any) -> tuple[str | None, Any]:
    """The ``date`` of entries made from a record whose time is ``value``, and the original when it had to change.

    A log's own ISO-8601 UTC text (``…Z`` or ``…+00:00``) is kept character for character; any other time (another
    offset, no offset, Unix seconds) is written in UTC and its original returned beside it. ``(None, None)`` when
    ``value`` is no time.
    """
    if isinstance(value, str) and _UTC_ISO.fullmatch(value.strip()) and iso_date(value) is not None:
        return value.strip(), None
    converted = iso_date(value)
    return (converted, value) if converted is not None else (None, None)


def iso_date(value: Any) -> str | None:
    """``value`` as Bub writes a date (ISO-8601 in UTC, with its offset); ``None`` when it is no time.

    Strings are read as ISO-8601 (a ``Z`` suffix or no offset means UTC); numbers are Unix seconds, or
    milliseconds when they are too large to be seconds.
    """
    when: datetime | None = None
    if isinstance(value, str) and value.strip():
        try:
            when = datetime.fromisoformat(value.strip())
        except ValueError:
            return None
    elif isinstance(value, int | float) and not isinstance(value, bool):
        seconds = value / 1000 if abs(value) > 1e11 else value
        try:
            when = datetime.fromtimestamp(seconds, UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    try:
        return when.astimezone(UTC).isoformat()
    except (OverflowError, ValueError):
        return None


def mapping(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one: logs leave fields out or null."""
    return value if isinstance(value, dict) else {}


def arguments_text(arguments: Any) -> str:
    """A call's arguments as the JSON text an OpenAI tool call carries."""
    if isinstance(arguments, str):
        return arguments
    return text({} if arguments is None else arguments)


def openai_call(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    """One OpenAI chat ``tool_calls`` item."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments_text(arguments)}}


def openai_usage(prompt: Any, completion: Any, total: Any = None, cached: Any = None) -> dict[str, Any] | None:
    """Token counts in the shape bub_nb's ``run`` events hold (OpenAI's); ``None`` when there is no count."""
    counts = [value if type(value) is int else None for value in (prompt, completion, total, cached)]
    prompt_tokens, completion_tokens, total_tokens, cached_tokens = counts
    if prompt_tokens is None and completion_tokens is None:
        return None
    prompt_tokens, completion_tokens = prompt_tokens or 0, completion_tokens or 0
    usage: dict[str, Any] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": total_tokens if total_tokens is not None else prompt_tokens + completion_tokens,
    }
    if cached_tokens:
        usage["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
    return usage


def with_details(usage: dict[str, Any] | None, details: Any) -> dict[str, Any] | None:
    """``usage`` with every whole-number count of a log's OpenAI-shaped details (``prompt_tokens_details``,
    ``completion_tokens_details``: cached, reasoning, audio, prediction tokens) added as the endpoint named them."""
    if usage is None or not isinstance(details, dict):
        return usage
    for group in ("prompt_tokens_details", "completion_tokens_details"):
        counts = details.get(group)
        if isinstance(counts, dict):
            kept = {name: count for name, count in counts.items() if type(count) is int}
            if kept:
                usage[group] = {**usage.get(group, {}), **kept}
    return usage


def text(value: Any) -> str:
    """``value`` as text: strings as they are, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value).decode()
    except (TypeError, orjson.JSONEncodeError):  # integers beyond 64 bits, keys that are not strings
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def anthropic_result(content: Any) -> Any:
    """A ``tool_result`` block's content: its text, or the blocks themselves when they are more than text."""
    if isinstance(content, list):
        texts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        if len(texts) == len(content) and all(isinstance(t, str) for t in texts):
            return "\n\n".join(texts)  # type: ignore[arg-type]
        return content
    return content if content is not None else ""


def anthropic_image(block: dict[str, Any]) -> dict[str, Any]:
    """An Anthropic ``image`` block as an OpenAI ``image_url`` content part."""
    source = mapping(block.get("source"))
    if source.get("type") == "base64":
        url = f"data:{source.get('media_type')};base64,{source.get('data')}"
        return {"type": "image_url", "image_url": {"url": url}}
    return {"type": "image_url", "image_url": {"url": source.get("url", "")}}
