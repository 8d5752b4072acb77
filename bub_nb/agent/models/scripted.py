"""A model that replays given replies in order, for tests and lessons that need exact answers."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from bub_nb.agent.models.base import Completion, LocalModel, Message, ToolCall, ToolSchema, Usage
from bub_nb.errors import ModelError

__all__ = ["ModelRequest", "Reply", "ScriptedModel"]

Reply = str | Mapping[str, Any] | BaseException | type[BaseException]


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """What one call sent to a scripted model (copied, so later changes to the lists do not show)."""

    messages: list[Message]
    tools: list[ToolSchema] | None

    @property
    def tool_names(self) -> list[str]:
        return [str((tool.get("function") or {}).get("name", "")) for tool in self.tools or ()]


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


class ScriptedModel(LocalModel):
    """Replays ``replies`` one per call, in order.

    A reply is a ``str`` (answer text), a mapping ``{"content"?, "tool_calls"?: [{"name",
    "arguments": dict | str, "id"?}], "usage"?}``, or an exception instance or class to raise.
    Every call is recorded in :attr:`requests`, including calls refused by ``context_window``
    (which, like an endpoint's refusal, consume no reply).
    """

    def __init__(self, replies: Iterable[Reply], *, context_window: int | None = None, name: str = "scripted") -> None:
        self.name = name
        self.context_window = context_window
        self.replies: list[Reply] = list(replies)
        self.requests: list[ModelRequest] = []
        self._next = 0

    def __repr__(self) -> str:
        return f"ScriptedModel(name={self.name!r}, replies={len(self.replies)}, used={self._next})"

    @property
    def remaining(self) -> int:
        """Replies not yet used."""
        return len(self.replies) - self._next

    async def complete(self, messages: list[Message], tools: list[ToolSchema] | None = None) -> Completion:
        self.requests.append(ModelRequest(copy.deepcopy(messages), copy.deepcopy(tools)))
        return await super().complete(messages, tools)

    def answer(self, messages: list[Message], tools: list[ToolSchema] | None, prompt_tokens: int) -> Completion:
        if self._next >= len(self.replies):
            raise ModelError(
                f"ScriptedModel {self.name!r} ran out of replies: it was given {len(self.replies)} "
                f"and asked for a {_ordinal(self._next + 1)}"
            )
        reply = self.replies[self._next]
        self._next += 1
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, type) and issubclass(reply, BaseException):
            raise reply(f"scripted {reply.__name__} from ScriptedModel {self.name!r} (reply {self._next})")
        if isinstance(reply, str):
            return self.completion(reply, (), prompt_tokens)
        if isinstance(reply, Mapping):
            return self._from_mapping(reply, prompt_tokens)
        raise ModelError(
            f"ScriptedModel {self.name!r}: reply {self._next} is a {type(reply).__name__}, "
            f"not a str, a mapping or an exception: {reply!r}"
        )

    def _from_mapping(self, reply: Mapping[str, Any], prompt_tokens: int) -> Completion:
        unknown = set(reply) - {"content", "tool_calls", "usage"}
        if unknown:
            raise ModelError(
                f"ScriptedModel {self.name!r}: reply {self._next} has unknown keys "
                f"{sorted(unknown)}; use content, tool_calls and usage"
            )
        calls = []
        for position, call in enumerate(reply.get("tool_calls") or (), start=1):
            arguments = call.get("arguments", {})
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments, ensure_ascii=False)
            calls.append(ToolCall(str(call.get("id") or f"call_{self._next}_{position}"), call["name"], arguments))
        usage = Usage.from_openai(reply.get("usage"))
        return self.completion(str(reply.get("content") or ""), tuple(calls), prompt_tokens, usage)
