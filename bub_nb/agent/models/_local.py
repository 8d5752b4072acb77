"""What the in-process models share: a context window, token estimates and word-by-word streaming."""

from __future__ import annotations

import asyncio
import re
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from typing import Any

from bub_nb.agent.models.base import Completion, Message, TextDelta, ToolCall, ToolSchema, Usage
from bub_nb.context.tokens import count_messages_tokens, count_text_tokens
from bub_nb.errors import ContextLengthError

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
