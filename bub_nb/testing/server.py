"""``OpenAICompatibleServer``: start, script and stop a local OpenAI-compatible endpoint."""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import Any

from bub_nb.testing.refusals import STATUS_MESSAGES, context_length_error, error_body
from bub_nb.testing.script import DEFAULT_TEXT, ReplyScript, ScriptedReply, usage_dict
from bub_nb.testing.wire import THREAD_PREFIX, EndpointHTTPServer

RETRY_AFTER = 0.01
"""Seconds a retryable fault asks the client to wait: short, so client retries cost milliseconds."""


class OpenAICompatibleServer:
    """An OpenAI-compatible endpoint on 127.0.0.1 with a FIFO script of replies.

    Use it as a context manager, or call :meth:`start` and :meth:`stop`. ``base_url`` is what the
    openai client takes (``http://127.0.0.1:PORT/v1``); ``requests`` holds every request body.
    Each scripting method queues one reply for one request and returns the server, so calls chain.
    With ``api_key`` a request without ``Authorization: Bearer <api_key>`` gets OpenAI's 401 and is not recorded.
    """

    def __init__(
        self,
        *,
        context_window: int | None = None,
        model: str = "bub-nb-test",
        default_text: str = DEFAULT_TEXT,
        api_key: str | None = None,
    ) -> None:
        self._script = ReplyScript(
            model=model, default_text=default_text, context_window=context_window, api_key=api_key
        )
        self._http: EndpointHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> OpenAICompatibleServer:
        if self._http is not None:
            return self
        self._http = EndpointHTTPServer(self._script)
        self._thread = threading.Thread(
            target=self._http.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"{THREAD_PREFIX}:{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, cut open connections (waking delayed replies) and join every thread."""
        http, thread = self._http, self._thread
        if http is None or thread is None:
            return
        self._http = self._thread = None
        http.stopping.set()
        http.shutdown()
        http.close_connections()
        http.server_close()
        thread.join(timeout=5)
        handlers = http.handler_threads()
        for handler in handlers:
            handler.join(timeout=5)
        alive = [t.name for t in (thread, *handlers) if t.is_alive()]
        if alive:
            raise RuntimeError(f"the local test endpoint could not stop threads: {', '.join(alive)}")

    def __enter__(self) -> OpenAICompatibleServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._http is None:
            raise RuntimeError("the local test endpoint is not running; call start() or use it in a with block")
        return int(self._http.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __repr__(self) -> str:
        where = self.base_url if self._http is not None else "stopped"
        return f"OpenAICompatibleServer({where}, pending={self.pending}, requests={len(self.requests)})"

    # -- settings --------------------------------------------------------------------------------

    @property
    def model(self) -> str:
        """The model id ``GET /v1/models`` lists."""
        return self._script.model

    @property
    def default_text(self) -> str:
        """What a request gets when the script is empty."""
        return self._script.default_text

    @default_text.setter
    def default_text(self, text: str) -> None:
        self._script.default_text = text

    @property
    def embedding_aliases(self) -> dict[str, str]:
        """Words ``/v1/embeddings`` reads as others (``{"kitten": "cat"}``): what a real model knows is near."""
        return self._script.embedding_aliases

    @embedding_aliases.setter
    def embedding_aliases(self, aliases: Mapping[str, str]) -> None:
        self._script.embedding_aliases = {word.lower(): other.lower() for word, other in aliases.items()}

    @property
    def context_window(self) -> int | None:
        """Prompts estimated above this many tokens get OpenAI's 400 ``context_length_exceeded``."""
        return self._script.context_window

    @context_window.setter
    def context_window(self, tokens: int | None) -> None:
        self._script.context_window = tokens

    # -- scripting -------------------------------------------------------------------------------

    def reply(
        self,
        text: str,
        *,
        usage: Mapping[str, Any] | Any = None,
        delay: float = 0.0,
        chunk_delay: float = 0.0,
        finish_reason: str | None = None,
        stream_usage: bool = True,
    ) -> OpenAICompatibleServer:
        """Answer the next request with ``text``, streamed one word per chunk.

        ``usage`` is a usage mapping (or a ``Usage``), whose ``cached_tokens`` and ``reasoning_tokens`` are
        reported in OpenAI's ``prompt_tokens_details`` and ``completion_tokens_details``; without it the reply
        reports token estimates. ``delay`` holds the whole answer back; ``chunk_delay`` paces a stream.
        ``stream_usage=False`` leaves usage out of a stream even when the request asks for it.
        """
        reply = ScriptedReply(
            text, (), usage_dict(usage), delay, chunk_delay, finish_reason=finish_reason, stream_usage=stream_usage
        )
        return self._push(reply)

    def refuse(self, status: int, body: Mapping[str, Any]) -> OpenAICompatibleServer:
        """Answer the next request with HTTP ``status`` and exactly ``body``, as a server other than OpenAI words it."""
        return self._push(ScriptedReply(status=status, error=dict(body)))

    def empty_stream(self) -> OpenAICompatibleServer:
        """Answer the next request, if it streams, with 200 and no event at all (then the script goes on)."""
        return self._push(ScriptedReply(empty_stream=True))

    def ping_only(self, every: float = 0.1) -> OpenAICompatibleServer:
        """Answer the next request with SSE ``: ping`` comments every ``every`` seconds and nothing else."""
        return self._push(ScriptedReply(ping_every=every))

    def reply_tool_calls(
        self,
        calls: Iterable[Mapping[str, Any]],
        *,
        content: str = "",
        usage: Mapping[str, Any] | Any = None,
        delay: float = 0.0,
    ) -> OpenAICompatibleServer:
        """Answer the next request with tool calls ``[{"name", "arguments": dict | str, "id"?}]``.

        Ids default to ``call_1``, ``call_2``, ... counted across the server's life.
        """
        tool_calls = []
        for call in calls:
            arguments = call.get("arguments", {})
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments)
            function = {"name": call["name"], "arguments": arguments}
            tool_calls.append(
                {"id": call.get("id") or self._script.call_id(), "type": "function", "function": function}
            )
        if not tool_calls:
            raise ValueError("reply_tool_calls needs at least one call")
        return self._push(ScriptedReply(content, tuple(tool_calls), usage_dict(usage), delay))

    def fail(
        self,
        status: int,
        message: str | None = None,
        *,
        code: str | None = None,
        error_type: str | None = None,
        retry_after: float | None = RETRY_AFTER,
        delay: float = 0.0,
    ) -> OpenAICompatibleServer:
        """Answer the next request with HTTP ``status`` and an OpenAI-shaped error body.

        Retryable statuses (408, 409, 429, 5xx) carry ``Retry-After`` and ``retry-after-ms``
        headers of ``retry_after`` seconds, which the openai client honours instead of its own
        backoff (0.5 s and up); ``retry_after=None`` leaves them out.
        """
        server_side = status >= 500
        default_type = "server_error" if server_side else "requests" if status == 429 else "invalid_request_error"
        if status == 429 and code is None:
            code = "rate_limit_exceeded"
        headers: dict[str, str] = {}
        if retry_after is not None and (status in (408, 409, 429) or server_side):
            headers = {
                "Retry-After": str(max(1, math.ceil(retry_after))),
                "retry-after-ms": str(max(1, round(retry_after * 1000))),
            }
        text = message or STATUS_MESSAGES.get(status, f"HTTP {status} from the local test endpoint")
        error = error_body(text, error_type or default_type, code)
        return self._push(ScriptedReply(status=status, error=error, headers=headers, delay=delay))

    def fail_context_length(self, limit: int = 8192, requested: int | None = None) -> OpenAICompatibleServer:
        """Answer the next request with OpenAI's 400 ``context_length_exceeded`` error.

        Without ``requested`` the error names the server's own count of that request, as OpenAI's does (a client
        that calibrates its estimates on the count is not misled by a number made up for the script).
        """
        if requested is None:
            return self._push(ScriptedReply(status=400, overflow_limit=limit))
        return self._push(ScriptedReply(status=400, error=context_length_error(limit, requested)))

    def delay(self, seconds: float, text: str | None = None) -> OpenAICompatibleServer:
        """Answer the next request only after ``seconds`` (to trip client timeouts)."""
        return self._push(ScriptedReply(self._script.default_text if text is None else text, delay=seconds))

    def together(self, texts: Iterable[str]) -> OpenAICompatibleServer:
        """Answer the next requests with ``texts``, one each, only once all of them have arrived: two clients that
        must be inside their requests at the same moment (a race forced without waiting on a clock)."""
        texts = list(texts)
        barrier = threading.Barrier(len(texts))
        for text in texts:
            self._push(ScriptedReply(text, together=barrier))
        return self

    def drop_after(self, chunks: int, text: str) -> OpenAICompatibleServer:
        """Stream the first ``chunks`` words of ``text``, then cut the connection mid-stream.

        A request that does not stream gets half its JSON body before the cut.
        """
        return self._push(ScriptedReply(text, drop_after=chunks))

    def fail_embeddings(
        self, status: int, message: str | None = None, *, code: str | None = None, times: int = 1
    ) -> OpenAICompatibleServer:
        """Answer the next ``times`` requests to ``/v1/embeddings`` with HTTP ``status`` (no retry headers), then
        vectors again; chat replies are scripted apart."""
        text = message or STATUS_MESSAGES.get(status, f"HTTP {status} from the local test endpoint")
        kind = "server_error" if status >= 500 else "invalid_request_error"
        for _ in range(times):
            self._script.push_embedding_fault(ScriptedReply(status=status, error=error_body(text, kind, code)))
        return self

    def _push(self, reply: ScriptedReply) -> OpenAICompatibleServer:
        self._script.push(reply)
        return self

    # -- what happened ---------------------------------------------------------------------------

    @property
    def pending(self) -> int:
        """Scripted replies not yet used."""
        return self._script.pending

    def drop_pending(self) -> int:
        """Forget the scripted replies no request used (a step of a test that ended early); returns how many."""
        return self._script.drop_pending()

    @property
    def requests(self) -> list[Any]:
        """A snapshot of every chat request body received, oldest first (refused ones included)."""
        return self._script.requests

    @property
    def embedding_requests(self) -> list[Any]:
        """Every ``/v1/embeddings`` request body received, oldest first."""
        return self._script.embedding_requests

    @property
    def last_request(self) -> Any:
        requests = self.requests
        if not requests:
            raise LookupError("the local test endpoint has received no chat request yet")
        return requests[-1]

    @property
    def open_connections(self) -> int:
        """Client connections open right now, kept-alive ones included (0 when stopped)."""
        http = self._http
        if http is None:
            return 0
        with http.tracked_lock:
            return len(http.connections)

    def wait_for_open_connections(self, count: int, timeout: float) -> bool:
        """Wait until at most ``count`` client connections are open, woken as each one closes.

        True once they are; False if ``timeout`` seconds pass first (a bound on a hang, not a speed).
        """
        http = self._http
        if http is None:
            return True
        with http.tracked_lock:
            return http.tracked_lock.wait_for(lambda: len(http.connections) <= count, timeout)
