"""Any OpenAI-compatible chat endpoint (OpenAI, Ollama, vLLM, llama.cpp) through the ``openai`` client."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncGenerator, AsyncIterator
from typing import TYPE_CHECKING, Any

from bub_nb.agent.models.base import Completion, Message, TextDelta, ToolCall, ToolSchema, Usage
from bub_nb.errors import ContextLengthError, ModelError

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = ["CONTEXT_LENGTH_PATTERNS", "OpenAIModel", "is_context_length_error"]

# The wordings Bub matches, plus the wordings of llama.cpp ("context size") and others ("context window").
CONTEXT_LENGTH_PATTERNS = (
    "context length",
    "maximum context",
    "token limit",
    "prompt too long",
    "context_length_exceeded",
    "context window",
    "context size",
)

_MESSAGE_LIMIT = 500


_WINDOW = re.compile(r"(?:maximum context length is|context (?:window|size|length)(?: of| is)?)\s*(\d+)", re.I)


def reported_window(message: str) -> int | None:
    """The context window in tokens an endpoint's refusal names ("maximum context length is 8192"), if any."""
    found = _WINDOW.search(message)
    return int(found.group(1)) if found else None


def is_context_length_error(message: str, code: str | None = None) -> bool:
    """Whether an endpoint's error means the prompt did not fit the model's context."""
    text = f"{code or ''} {message}".lower()
    return any(pattern in text for pattern in CONTEXT_LENGTH_PATTERNS)


class OpenAIModel:
    """A chat model behind an OpenAI-compatible endpoint.

    The ``openai.AsyncOpenAI`` client is made on first use, once per event loop (a pooled
    connection belongs to the loop that opened it), and closed when ``asyncio.run`` shuts that
    loop down. Retries of 429 and 5xx answers, timeouts and refused connections are the client's
    own (``max_retries``; it honours ``Retry-After``). Failures surface as
    :class:`~bub_nb.errors.ModelError`, prompts that are too long as
    :class:`~bub_nb.errors.ContextLengthError`.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
    ) -> None:
        if not model:
            raise ModelError("OpenAIModel needs a model name, for example 'gpt-4o-mini'")
        self.model = model
        self.name = f"openai:{model}"
        self.base_url = base_url
        self.timeout = timeout
        self.max_retries = max_retries
        self._api_key = api_key
        self.context_window: int | None = None
        self._client: AsyncOpenAI | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._closer: AsyncGenerator[None, None] | None = None

    def __repr__(self) -> str:
        return (
            f"OpenAIModel({self.model!r}, base_url={self.base_url!r}, timeout={self.timeout}, "
            f"max_retries={self.max_retries})"
        )

    @property
    def endpoint(self) -> str:
        return self.base_url or "the OpenAI API"

    async def client(self) -> AsyncOpenAI:
        """The client for the running event loop, made on first use."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            import openai

            client = openai.AsyncOpenAI(
                api_key=self._api_key, base_url=self.base_url, timeout=self.timeout, max_retries=self.max_retries
            )
            closer = _close_at_loop_shutdown(client)
            # A started async generator is registered with its loop, and asyncio.run closes those
            # (loop.shutdown_asyncgens) while the loop still runs: the one moment the pool can be closed.
            await anext(closer)
            self._client, self._client_loop, self._closer = client, loop, closer
        return self._client

    async def aclose(self) -> None:
        """Close the client's connections now (a later call opens new ones)."""
        closer, self._closer, self._client = self._closer, None, None
        if closer is not None and self._client_loop is asyncio.get_running_loop():
            await closer.aclose()

    # -- calls -----------------------------------------------------------------------------------

    def _request(self, messages: list[Message], tools: list[ToolSchema] | None) -> dict[str, Any]:
        request: dict[str, Any] = {"model": self.model, "messages": messages}
        if tools:
            request["tools"] = tools
        return request

    async def complete(self, messages: list[Message], tools: list[ToolSchema] | None = None) -> Completion:
        try:
            client = await self.client()
            response = await client.chat.completions.create(**self._request(messages, tools))
        except Exception as exc:
            error = self._translate(exc)
            if error is None:
                raise
            raise error from exc
        if not response.choices:
            raise ModelError(f"Model {self.model!r} at {self.endpoint} answered without any choice")
        choice = response.choices[0]
        calls = tuple(
            ToolCall(call.id, call.function.name, call.function.arguments or "")
            for call in choice.message.tool_calls or ()
            if getattr(call, "function", None) is not None
        )
        return Completion(
            choice.message.content or "",
            calls,
            Usage.from_openai(response.usage),
            choice.finish_reason,
            response.model or self.model,
        )

    async def stream(
        self, messages: list[Message], tools: list[ToolSchema] | None = None
    ) -> AsyncIterator[TextDelta | Completion]:
        request = self._request(messages, tools)
        text: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        usage: Usage | None = None
        finish_reason: str | None = None
        model = self.model
        chunks = 0
        try:
            client = await self.client()
            stream = await client.chat.completions.create(
                **request, stream=True, stream_options={"include_usage": True}
            )
            async with stream:
                async for chunk in stream:
                    chunks += 1
                    model = chunk.model or model
                    if chunk.usage is not None:
                        usage = Usage.from_openai(chunk.usage)
                    for choice in chunk.choices:
                        finish_reason = choice.finish_reason or finish_reason
                        delta = choice.delta
                        for part in delta.tool_calls or ():
                            _add_call_delta(calls, part)
                        if delta.content:
                            text.append(delta.content)
                            yield TextDelta(delta.content)
        except Exception as exc:
            error = self._translate(exc, chunks=chunks)
            if error is None:
                raise
            raise error from exc
        if finish_reason is None:
            raise ModelError(
                f"Model {self.model!r} at {self.endpoint}: the stream ended after {chunks} chunks "
                "before the model finished its answer"
            )
        tool_calls = tuple(
            ToolCall(call["id"] or f"call_{index}", call["name"], call["arguments"])
            for index, call in sorted(calls.items())
        )
        yield Completion("".join(text), tool_calls, usage, finish_reason, model)

    # -- errors ----------------------------------------------------------------------------------

    def _translate(self, exc: Exception, chunks: int = 0) -> ModelError | None:
        """The bub_nb error for a failure of the openai client; None for anything else."""
        import openai

        where = f"Model {self.model!r} at {self.endpoint}"
        if isinstance(exc, openai.APITimeoutError):
            return ModelError(
                self._scrub(
                    f"{where} timed out: no answer within {self.timeout:g} s (after {self.max_retries} retries)"
                )
            )
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ or exc.__context__
            detail = f": {cause}" if cause is not None else ""
            if chunks:
                return ModelError(
                    self._scrub(f"{where}: the connection dropped mid-stream after {chunks} chunks{detail}")
                )
            return ModelError(self._scrub(f"{where} could not be reached{detail}"))
        if isinstance(exc, openai.APIError):
            message, code = _error_message(exc)
            status = getattr(exc, "status_code", None)
            answered = f"answered {status}" if status is not None else "reported an error mid-stream"
            text = self._scrub(f"{where} {answered}: {message}")
            if is_context_length_error(message, code):
                # Remember the window the endpoint named, so the next too-long prompt is refused before it is written.
                self.context_window = reported_window(message) or self.context_window
                return ContextLengthError(text)
            return ModelError(text)
        return None

    def _scrub(self, message: str) -> str:
        """One short line, and never the API key, even when a server echoes it back."""
        message = " ".join(message.split())
        if len(message) > _MESSAGE_LIMIT:  # a proxy's HTML error page is no use in one line
            message = message[: _MESSAGE_LIMIT - 1] + "…"
        if self._api_key and len(self._api_key) >= 4:
            message = message.replace(self._api_key, "***")
        return message


async def _close_at_loop_shutdown(client: AsyncOpenAI) -> AsyncGenerator[None, None]:
    try:
        yield
    finally:
        await client.close()


def _add_call_delta(calls: dict[int, dict[str, str]], part: Any) -> None:
    """Fold one streamed tool_call delta into the call it continues (matched by ``index``)."""
    index = part.index if part.index is not None else len(calls)
    call = calls.setdefault(index, {"id": "", "name": "", "arguments": ""})
    if part.id:
        call["id"] = part.id
    function = part.function
    if function is None:
        return
    # OpenAI sends the name once; some servers repeat it whole in later deltas, which must not double it
    if function.name and function.name != call["name"]:
        call["name"] += function.name
    if function.arguments:
        call["arguments"] += function.arguments


def _error_message(exc: Any) -> tuple[str, str | None]:
    """The server's own error message and code, without the client's ``Error code: ...`` prefix."""
    body = getattr(exc, "body", None)
    code = getattr(exc, "code", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            code = code or (str(error["code"]) if error.get("code") is not None else None)
            if isinstance(error.get("message"), str):
                return error["message"], code
    elif isinstance(body, str) and body.strip():
        return body.strip(), code
    return str(getattr(exc, "message", exc)), code
