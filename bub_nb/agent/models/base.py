"""What a model is to the agent loop: the ``Model`` protocol and the values it returns."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from bub_nb.errors import ToolCallError

__all__ = ["Completion", "Message", "Model", "TextDelta", "ToolCall", "ToolSchema", "Usage"]

Message = dict[str, Any]
"""An OpenAI chat message."""
ToolSchema = dict[str, Any]
"""An OpenAI tool schema, ``{"type": "function", "function": {"name", "description", "parameters"}}``."""


@dataclass(frozen=True, slots=True)
class Usage:
    """Token usage of one model call, as the endpoint reported it, or ``estimated`` when it reported none."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    estimated: bool = False

    @classmethod
    def of(cls, prompt_tokens: int, completion_tokens: int, *, estimated: bool = False) -> Usage:
        return cls(prompt_tokens, completion_tokens, prompt_tokens + completion_tokens, estimated)

    @staticmethod
    def add(total: Usage | None, more: Usage | None) -> Usage | None:
        """The usage of two calls together; a call that reported none adds nothing."""
        if total is None or more is None:
            return more if total is None else total
        return Usage(
            total.prompt_tokens + more.prompt_tokens,
            total.completion_tokens + more.completion_tokens,
            total.total_tokens + more.total_tokens,
            total.estimated or more.estimated,
        )

    @classmethod
    def from_openai(cls, usage: Any) -> Usage | None:
        """Read the ``usage`` of an OpenAI response, either the client's object or a plain dict."""
        if usage is None:
            return None
        if not isinstance(usage, Mapping):
            usage = {
                name: getattr(usage, name, None) for name in ("prompt_tokens", "completion_tokens", "total_tokens")
            }
        prompt = int(usage.get("prompt_tokens") or 0)
        completion = int(usage.get("completion_tokens") or 0)
        total = usage.get("total_tokens")
        estimated = usage.get("estimated") is True
        return cls(prompt, completion, int(total) if total is not None else prompt + completion, estimated)

    def as_dict(self) -> dict[str, int | bool]:
        """OpenAI's usage keys, and ``estimated: true`` when the counts are bub_nb's, not the endpoint's."""
        data: dict[str, int | bool] = {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
        }
        if self.estimated:
            data["estimated"] = True
        return data


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One function call the model asked for; ``arguments`` is the raw JSON text it sent."""

    id: str
    name: str
    arguments: str

    @classmethod
    def from_openai(cls, call: Mapping[str, Any]) -> ToolCall:
        """Read an OpenAI tool_call dict, as a tape's ``tool_call`` entry stores it."""
        function = call.get("function") or {}
        arguments = function.get("arguments", "")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        return cls(str(call.get("id", "")), str(function.get("name", "")), arguments)

    def to_openai(self) -> dict[str, Any]:
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}

    def parse_arguments(self) -> dict[str, Any]:
        """The arguments as a dict; empty text means no arguments."""
        if not self.arguments.strip():
            return {}
        try:
            value = json.loads(self.arguments)
        except ValueError as exc:
            problem = f"Tool {self.name!r} got arguments that are not JSON ({exc})"
            raise ToolCallError(self.name, "invalid_input", f"{problem}: {self.arguments!r}") from exc
        if not isinstance(value, dict):
            problem = f"Tool {self.name!r} got arguments that are not a JSON object: {self.arguments!r}"
            raise ToolCallError(self.name, "invalid_input", problem)
        return value


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of streamed answer text."""

    text: str


@dataclass(frozen=True, slots=True)
class Completion:
    """One finished model answer: text, the tool calls it asked for, and usage when known."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage | None = None
    finish_reason: str | None = "stop"
    model: str = ""

    def to_message(self) -> dict[str, Any]:
        """The assistant message to send back to the model on the next step."""
        message: dict[str, Any] = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            message["tool_calls"] = [call.to_openai() for call in self.tool_calls]
        return message


@runtime_checkable
class Model(Protocol):
    """A chat model: OpenAI-format messages and tool schemas in, a completion out.

    ``tools`` are OpenAI tool schemas (``{"type": "function", "function": {...}}``) whose names are
    already underscored. ``stream`` yields :class:`TextDelta` items and ends with the
    :class:`Completion`. Both raise :class:`~bub_nb.errors.ModelError` (or its
    ``ContextLengthError``) when the endpoint fails.
    """

    name: str

    async def complete(self, messages: list[Message], tools: list[ToolSchema] | None = None) -> Completion: ...

    def stream(
        self, messages: list[Message], tools: list[ToolSchema] | None = None
    ) -> AsyncIterator[TextDelta | Completion]: ...


def context_window_of(model: object) -> int | None:
    """The model's context window in tokens, if it declares one or an endpoint has reported it."""
    window = getattr(model, "context_window", None)
    return window if isinstance(window, int) and not isinstance(window, bool) and window > 0 else None
