"""Tape messages in the GenAI conventions' message shape (``role`` and ``parts``), for opt-in content capture."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from bub_nb.tape.entries import plain_json


def to_json(value: Any) -> str:
    """A value as the JSON text a span attribute carries (a lone surrogate is written as its ``\\u`` escape)."""
    plain = plain_json(value)
    try:
        return orjson.dumps(plain).decode()
    except TypeError:  # orjson refuses lone surrogates, which a tape may hold
        return json.dumps(plain, separators=(",", ":"))


def mapping(value: Any) -> Mapping[str, Any]:
    """``value`` when it is a mapping, else an empty one: tapes hold what their writers wrote."""
    return value if isinstance(value, Mapping) else {}


def tool_arguments(arguments: Any) -> Any:
    """A call's arguments as an object when they are JSON text (as OpenAI sends them), else as they are."""
    if isinstance(arguments, str):
        try:
            return orjson.loads(arguments)
        except orjson.JSONDecodeError:
            return arguments
    return arguments


def text_of(content: Any) -> str:
    """A message's text: a string as is, OpenAI content parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return "" if content is None else str(content)


def input_message(role: str, parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {"role": role, "parts": parts}


def output_message(content: Any, calls: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The assistant's answer: its text (when it has any), then one ``tool_call`` part per call."""
    parts: list[dict[str, Any]] = []
    text = text_of(content)
    if text:
        parts.append({"type": "text", "content": text})
    for call in calls:
        function = mapping(call.get("function"))
        parts.append(
            {
                "type": "tool_call",
                "id": str(call.get("id", "")),
                "name": str(function.get("name", "")),
                "arguments": tool_arguments(function.get("arguments")),
            }
        )
    return {"role": "assistant", "parts": parts}


def system_parts(system: str) -> list[dict[str, Any]]:
    return [{"type": "text", "content": system}]
