"""What a model is to the agent loop: the ``Model`` protocol, the values it returns, and ``LocalModel``, what the
in-process models share (a context window, token estimates and word-by-word streaming)."""

from __future__ import annotations

import asyncio
import json
import re
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from bub_nb.context.tokens import count_messages_tokens, count_text_tokens
from bub_nb.errors import ContextLengthError, ToolCallError

__all__ = ["Completion", "Message", "Model", "TextDelta", "ToolCall", "ToolSchema", "Usage"]

Message = dict[str, Any]
"""An OpenAI chat message."""
ToolSchema = dict[str, Any]
"""An OpenAI tool schema, ``{"type": "function", "function": {"name", "description", "parameters"}}``."""


_COUNTED = ("prompt_tokens", "completion_tokens", "total_tokens", "estimated")


@dataclass(frozen=True, slots=True)
class Usage:
    """Token usage of one model call, as the endpoint reported it, or ``estimated`` when it reported none.

    ``details`` keeps every other count the endpoint gave, as it named them: ``prompt_tokens_details``
    (``cached_tokens``, ``audio_tokens``), ``completion_tokens_details`` (``reasoning_tokens``, ...) and any
    whole-number field a server adds (DeepSeek's ``prompt_cache_hit_tokens``).
    """

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    estimated: bool = False
    details: Mapping[str, int | Mapping[str, int]] = field(default_factory=dict, hash=False)

    @classmethod
    def of(cls, prompt_tokens: int, completion_tokens: int, *, estimated: bool = False) -> Usage:
        return cls(prompt_tokens, completion_tokens, prompt_tokens + completion_tokens, estimated)

    @property
    def cached_tokens(self) -> int:
        """Prompt tokens the endpoint read from its cache (0 when it reported none)."""
        return _detail(self.details, "prompt_tokens_details", "cached_tokens")

    @property
    def reasoning_tokens(self) -> int:
        """Completion tokens the model spent reasoning (0 when the endpoint reported none)."""
        return _detail(self.details, "completion_tokens_details", "reasoning_tokens")

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
            _add_counts(total.details, more.details),
        )

    @classmethod
    def from_openai(cls, usage: Any, timings: Any = None) -> Usage | None:
        """Read the ``usage`` of an OpenAI response, either the client's object or a plain dict.

        ``timings`` is what llama-server adds beside ``usage``: its ``cache_n`` (the prompt tokens it kept from the
        previous request's prefix) is taken as ``prompt_tokens_details.cached_tokens`` when ``usage`` gives none,
        as llama-server's builds from before that field did.
        """
        if usage is None:
            return None
        if not isinstance(usage, Mapping):
            dump = getattr(usage, "model_dump", None)
            usage = dump() if callable(dump) else {name: getattr(usage, name, None) for name in _COUNTED}
        prompt = int(usage.get("prompt_tokens") or 0)
        completion = int(usage.get("completion_tokens") or 0)
        total = usage.get("total_tokens")
        estimated = usage.get("estimated") is True
        details = _counts({key: value for key, value in usage.items() if key not in _COUNTED})
        cache_n = timings.get("cache_n") if isinstance(timings, Mapping) else None
        if type(cache_n) is int and cache_n >= 0 and not _detail(details, "prompt_tokens_details", "cached_tokens"):
            given = details.get("prompt_tokens_details")
            inner: dict[str, int] = dict(given) if isinstance(given, Mapping) else {}
            inner["cached_tokens"] = cache_n
            details["prompt_tokens_details"] = inner
        return cls(prompt, completion, int(total) if total is not None else prompt + completion, estimated, details)

    def as_dict(self) -> dict[str, Any]:
        """OpenAI's usage keys with every detail the endpoint gave, and ``estimated: true`` when the counts are
        bub_nb's, not the endpoint's."""
        data: dict[str, Any] = {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
        }
        data.update({key: dict(value) if isinstance(value, Mapping) else value for key, value in self.details.items()})
        if self.estimated:
            data["estimated"] = True
        return data


def _is_count(value: Any) -> bool:
    return type(value) is int and value >= 0


def _counts(usage: Mapping[str, Any]) -> dict[str, int | Mapping[str, int]]:
    """The whole-number counts of a usage mapping, one level of nesting deep; ``None`` and the rest left out."""
    found: dict[str, int | Mapping[str, int]] = {}
    for key, value in usage.items():
        if _is_count(value):
            found[key] = value
        elif isinstance(value, Mapping):
            inner = {name: count for name, count in value.items() if _is_count(count)}
            if inner:
                found[key] = inner
    return found


def _add_counts(
    first: Mapping[str, int | Mapping[str, int]], second: Mapping[str, int | Mapping[str, int]]
) -> dict[str, int | Mapping[str, int]]:
    summed: dict[str, int | Mapping[str, int]] = dict(first)
    for key, value in second.items():
        mine = summed.get(key)
        if isinstance(value, Mapping):
            inner = dict(mine) if isinstance(mine, Mapping) else {}
            for name, count in value.items():
                inner[name] = inner.get(name, 0) + count
            summed[key] = inner
        else:
            summed[key] = (mine if isinstance(mine, int) else 0) + value
    return summed


def _detail(details: Mapping[str, int | Mapping[str, int]], group: str, name: str) -> int:
    found = details.get(group)
    return found.get(name, 0) if isinstance(found, Mapping) else 0


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


_WORDS = re.compile(r"\s*\S+\s*|\s+")


def word_chunks(text: str) -> list[str]:
    """``text`` cut after each word (with its whitespace), so the pieces join back exactly."""
    return _WORDS.findall(text)


def message_text(message: dict[str, Any]) -> str:
    """The text of a message, joining the text parts of multimodal content."""
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else ""


class LocalModel(ABC):
    """Base of models that answer in-process: subclasses implement :meth:`answer`.

    The prompt estimate is :func:`~bub_nb.context.tokens.count_messages_tokens` of the messages
    (tool schemas are not counted), the same figure the local test endpoint checks its window with.
    """

    name: str = "local"
    context_window: int | None = None
    counts_tool_schemas: bool = False
    """Whether the window holds the tool schemas too (endpoints count them; a local model does not)."""

    @abstractmethod
    def answer(self, messages: list[Message], tools: list[ToolSchema] | None, prompt_tokens: int) -> Completion:
        """The model's reply to ``messages`` (``prompt_tokens`` is their estimate)."""

    def prompt_tokens(self, messages: list[Message]) -> int:
        """The prompt estimate; over ``context_window`` it raises ContextLengthError as an endpoint would."""
        tokens = count_messages_tokens(messages)
        if self.context_window is not None and tokens > self.context_window:
            raise ContextLengthError(
                f"Model {self.name!r}: prompt too long: {tokens} tokens > context window {self.context_window}"
            )
        return tokens

    async def complete(self, messages: list[Message], tools: list[ToolSchema] | None = None) -> Completion:
        return self.answer(messages, tools, self.prompt_tokens(messages))

    async def stream(
        self, messages: list[Message], tools: list[ToolSchema] | None = None
    ) -> AsyncIterator[TextDelta | Completion]:
        completion = await self.complete(messages, tools)
        for piece in word_chunks(completion.text):
            yield TextDelta(piece)
            await asyncio.sleep(0)  # let a display redraw between pieces, as a network stream would
        yield completion

    def completion(
        self, text: str, tool_calls: tuple[ToolCall, ...], prompt_tokens: int, usage: Usage | None = None
    ) -> Completion:
        """A completion whose usage, unless given, is estimated from the prompt and the answer."""
        if usage is None:
            answered = text + "".join(call.name + call.arguments for call in tool_calls)
            usage = Usage.of(prompt_tokens, count_text_tokens(answered))
        return Completion(text, tool_calls, usage, "tool_calls" if tool_calls else "stop", self.name)
