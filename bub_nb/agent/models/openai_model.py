"""Any OpenAI-compatible chat endpoint (OpenAI, Ollama, vLLM, llama.cpp) through the ``openai`` client."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from typing import TYPE_CHECKING, Any

from bub_nb.agent.models.base import Completion, Message, TextDelta, ToolCall, ToolSchema, Usage
from bub_nb.agent.models.calibration import TokenScale, estimate_request
from bub_nb.agent.models.json_text import sendable
from bub_nb.agent.models.refusals import (
    CONTEXT_LENGTH_PATTERNS,
    is_context_length_error,
    lasting_failure,
    mark_lasting_failure,
    read_refusal,
    reported_window,
)
from bub_nb.context.tokens import count_messages_tokens, count_text_tokens
from bub_nb.errors import ContextLengthError, ModelError

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = ["CONTEXT_LENGTH_PATTERNS", "OpenAIModel", "is_context_length_error", "reported_window"]

_MESSAGE_LIMIT = 500
DEFAULT_TOTAL_TIMEOUT = 600.0
"""Seconds one model call may take in all, retries included: a server's keep-alive comments cannot extend it."""


class OpenAIModel:
    """A chat model behind an OpenAI-compatible endpoint.

    The ``openai.AsyncOpenAI`` client is made on first use, once per event loop (a pooled
    connection belongs to the loop that opened it), and closed when ``asyncio.run`` shuts that
    loop down. Retries of 429 and 5xx answers, timeouts and refused connections are the client's
    own (``max_retries``; it honours ``Retry-After``), except a server error the same request always
    gets again (:data:`~bub_nb.agent.models.refusals.LASTING_FAILURES`). ``timeout`` bounds each read,
    ``total_timeout`` the whole call. Failures surface as :class:`~bub_nb.errors.ModelError`, prompts
    that are too long as :class:`~bub_nb.errors.ContextLengthError`; the window a refusal names is kept in
    ``context_window`` and bounds ``max_tokens`` from then on, and the prompt tokens the server reports
    calibrate ``token_scale``.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        total_timeout: float | None = DEFAULT_TOTAL_TIMEOUT,
    ) -> None:
        if not model:
            raise ModelError("OpenAIModel needs a model name, for example 'gpt-4o-mini'")
        self.model = model
        self.name = f"openai:{model}"
        self.base_url = base_url
        self.timeout = timeout
        self.max_retries = max_retries
        self.total_timeout = total_timeout
        self._api_key = api_key
        self.context_window: int | None = None
        self.token_scale = TokenScale()
        self._client: AsyncOpenAI | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._closer: AsyncGenerator[None, None] | None = None

    def __repr__(self) -> str:
        return (
            f"OpenAIModel({self.model!r}, base_url={self.base_url!r}, timeout={self.timeout}, "
            f"max_retries={self.max_retries}, total_timeout={self.total_timeout})"
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
                api_key=self._api_key,
                base_url=self.base_url,
                timeout=self.timeout,
                max_retries=self.max_retries,
                http_client=openai.DefaultAsyncHttpxClient(event_hooks={"response": [mark_lasting_failure]}),
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
        request: dict[str, Any] = {"model": self.model, "messages": sendable(messages)}
        if tools:
            request["tools"] = sendable(tools)
        if self.context_window is not None:
            # A server that knows no end (llama.cpp's sends none) lets an answer run into the end of its window.
            room = self.context_window - estimate_request(self, messages)
            if room > 0:
                # OpenAI's reasoning models refuse max_tokens; the servers that copy its API know max_tokens.
                request["max_tokens" if self.base_url else "max_completion_tokens"] = room
        return request

    def _observe(self, messages: list[Message], usage: Usage | None) -> None:
        if usage is not None and not usage.estimated:
            self.token_scale.observe(count_messages_tokens(messages), usage.prompt_tokens)

    def _estimated_usage(self, messages: list[Message], text: str) -> Usage:
        """The usage of a call whose endpoint reported none, from calibrated estimates (marked ``estimated``)."""
        completion = self.token_scale.scaled(count_text_tokens(text))
        return Usage.of(estimate_request(self, messages), completion, estimated=True)

    async def complete(self, messages: list[Message], tools: list[ToolSchema] | None = None) -> Completion:
        try:
            async with asyncio.timeout(self.total_timeout):
                client = await self.client()
                response = await client.chat.completions.create(**self._request(messages, tools))
        except Exception as exc:
            error = self._translate(exc, messages=messages)
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
        text = choice.message.content or ""
        usage = Usage.from_openai(response.usage, _timings(response))
        self._observe(messages, usage)
        if usage is None:
            usage = self._estimated_usage(messages, text)
        return Completion(text, calls, usage, choice.finish_reason, response.model or self.model)

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
        # Each wait has its own timeout ending at one deadline: a timeout open across a yield would belong
        # to whichever task resumed the stream first.
        deadline = None if self.total_timeout is None else asyncio.get_running_loop().time() + self.total_timeout
        try:
            async with asyncio.timeout_at(deadline):
                client = await self.client()
                stream = await client.chat.completions.create(
                    **request, stream=True, stream_options={"include_usage": True}
                )
            async with stream:
                chunk_iterator = stream.__aiter__()
                while True:
                    async with asyncio.timeout_at(deadline):
                        chunk = await anext(chunk_iterator, None)
                    if chunk is None:
                        break
                    chunks += 1
                    model = chunk.model or model
                    if chunk.usage is not None:
                        usage = Usage.from_openai(chunk.usage, _timings(chunk))
                    for choice in chunk.choices:
                        finish_reason = choice.finish_reason or finish_reason
                        delta = choice.delta
                        for part in delta.tool_calls or ():
                            _add_call_delta(calls, part)
                        if delta.content:
                            text.append(delta.content)
                            yield TextDelta(delta.content)
        except Exception as exc:
            error = self._translate(exc, chunks=chunks, messages=messages)
            if error is None:
                raise
            raise error from exc
        if chunks == 0:
            # llama-cpp-python's server fails a stream with 200 and nothing else; unstreamed, it says why.
            completion = await self.complete(messages, tools)
            if completion.text:
                yield TextDelta(completion.text)
            yield completion
            return
        if finish_reason is None:
            raise ModelError(
                f"Model {self.model!r} at {self.endpoint}: the stream ended after {chunks} chunks "
                "before the model finished its answer"
            )
        tool_calls = tuple(
            ToolCall(call["id"] or f"call_{index}", call["name"], call["arguments"])
            for index, call in sorted(calls.items())
        )
        answer = "".join(text)
        self._observe(messages, usage)
        if usage is None:  # a server that ignores stream_options.include_usage
            usage = self._estimated_usage(messages, answer)
        yield Completion(answer, tool_calls, usage, finish_reason, model)

    # -- errors ----------------------------------------------------------------------------------

    def _translate(
        self, exc: BaseException, chunks: int = 0, messages: list[Message] | None = None
    ) -> ModelError | None:
        """The bub_nb error for a failure of the openai client; None for anything else."""
        import openai

        where = f"Model {self.model!r} at {self.endpoint}"
        if isinstance(exc, TimeoutError):  # asyncio.timeout: the whole call, however the server kept it alive
            return ModelError(
                self._scrub(f"{where} gave no complete answer within {self.total_timeout:g} s (total_timeout)")
            )
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
            code = getattr(exc, "code", None)
            refusal = read_refusal(
                getattr(exc, "body", None), str(getattr(exc, "message", exc)), code if isinstance(code, str) else None
            )
            status = getattr(exc, "status_code", None)
            answered = f"answered {status}" if status is not None else "reported an error mid-stream"
            text = f"{where} {answered}: {refusal.message}"
            if refusal.context_length:
                # Remember the window the endpoint named, so the next too-long prompt is refused before it is written.
                self.context_window = refusal.window or self.context_window
                if refusal.sent and messages is not None:
                    self.token_scale.observe(count_messages_tokens(messages), refusal.sent)
                return ContextLengthError(self._scrub(text))
            advice = lasting_failure(refusal.message)
            if advice is not None:
                text += f" (not retried: the same request gets the same answer; {advice})"
            return ModelError(self._scrub(text))
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


def _timings(response: Any) -> Any:
    """llama-server's ``timings`` beside a response's usage (``cache_n``, ``prompt_n``, ...), if it sent them."""
    extra = getattr(response, "model_extra", None)
    return extra.get("timings") if isinstance(extra, dict) else None
