"""A local OpenAI-compatible chat endpoint that tests, lessons and benchmarks script reply by reply.

The real ``openai`` client talks to it over HTTP on 127.0.0.1, so everything between the agent and
the wire runs for real. Each POST to ``/v1/chat/completions`` takes the next item of a FIFO script::

    with OpenAICompatibleServer() as server:
        server.reply("Hello!", usage={"prompt_tokens": 12, "completion_tokens": 3})
        server.reply_tool_calls([{"name": "memory_save", "arguments": {"content": "tea"}}])
        server.fail(500)                       # the openai client retries this one
        server.drop_after(2, "a partial answer that never ends")
        server.delay(2.0)                      # answers only after 2 s
        model = OpenAIModel("test", base_url=server.base_url, api_key="test")

An empty script answers at once with a short default text, so the server doubles as an instant
model. ``context_window=N`` refuses any prompt whose estimate exceeds N tokens with the 400 error
OpenAI sends, before the script is consulted. Requests are checked the way OpenAI checks them (tool
messages must answer a pending call, tool names must match ``^[a-zA-Z0-9_-]{1,64}$``); a bad request
gets a 400 ``invalid_request_error`` instead of a scripted reply. Retryable faults carry a
``retry-after-ms`` header (10 ms by default), which the openai client honours instead of its own
backoff, so retries cost milliseconds in tests.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = ["DEFAULT_TEXT", "OpenAICompatibleServer", "ScriptedReply"]

DEFAULT_TEXT = "OK: default reply from the local test endpoint."
_RETRY_AFTER = 0.01
_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_WORDS = re.compile(r"\s*\S+\s*|\s+")
_STATUS_MESSAGES = {
    400: "Bad request.",
    401: "Incorrect API key provided.",
    404: "The model does not exist or you do not have access to it.",
    429: "Rate limit reached for requests. Please try again shortly.",
    500: "The server had an error while processing your request. Sorry about that!",
    503: "The engine is currently overloaded, please try again later.",
}


@dataclass(frozen=True)
class ScriptedReply:
    """One scripted answer: text and/or tool calls, or a fault (``status``/``drop_after``)."""

    text: str = ""
    tool_calls: tuple[dict[str, Any], ...] = ()
    usage: Mapping[str, int] | None = None
    delay: float = 0.0
    chunk_delay: float = 0.0
    status: int = 200
    error: Mapping[str, Any] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    drop_after: int | None = None
    finish_reason: str | None = None


def _usage_dict(usage: Any) -> dict[str, int] | None:
    if usage is None:
        return None
    data = dict(usage.as_dict() if hasattr(usage, "as_dict") else usage)
    prompt, completion = int(data.get("prompt_tokens", 0)), int(data.get("completion_tokens", 0))
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": int(data.get("total_tokens", prompt + completion))}


def _error_body(message: str, type_: str, code: str | None = None, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def _request_problem(body: Any) -> str | None:
    """What OpenAI would reject in this chat request, or None when it is valid."""
    if not isinstance(body, dict):
        return "The request body must be a JSON object."
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "you must provide a model parameter"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "'messages' must be a non-empty array"
    for tool in body.get("tools") or ():
        name = (tool.get("function") or {}).get("name") if isinstance(tool, dict) else None
        if not isinstance(name, str) or not _TOOL_NAME.match(name):
            return f"Invalid 'tools': function name {name!r} does not match pattern '^[a-zA-Z0-9_-]{{1,64}}$'."
    unanswered = ("An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                  "'tool_call_id'. The following tool_call_ids did not have response messages: ")
    pending: list[str] = []
    for position, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("system", "developer", "user", "assistant", "tool"):
            return f"Invalid value for 'messages[{position}].role': {role!r}."
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in pending:
                return (f"Invalid parameter: messages with role 'tool' must be a response to a preceding message "
                        f"with 'tool_calls' (messages[{position}] answers {call_id!r}).")
            pending.remove(call_id)
            continue
        if pending:
            return unanswered + ", ".join(pending)
        if role == "assistant":
            pending = [call.get("id") for call in message.get("tool_calls") or ()]
    return unanswered + ", ".join(pending) if pending else None


class _HTTPServer(ThreadingHTTPServer):
    """Tracks its connections and handler threads so stopping can close and join every one."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, owner: OpenAICompatibleServer) -> None:
        self.owner = owner
        self.stopping = threading.Event()
        self.tracked_lock = threading.Lock()
        self.connections: set[socket.socket] = set()
        self.threads: set[threading.Thread] = set()
        super().__init__(("127.0.0.1", 0), _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(target=self.process_request_thread, args=(request, client_address),
                                  name=f"bub-nb-test-endpoint-{client_address[1]}", daemon=True)
        with self.tracked_lock:
            self.threads = {t for t in self.threads if t.is_alive()}
            self.threads.add(thread)
            self.connections.add(request)
        thread.start()

    def shutdown_request(self, request: Any) -> None:
        with self.tracked_lock:
            self.connections.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        with self.tracked_lock:
            connections = list(self.connections)
        for connection in connections:
            with contextlib.suppress(OSError):  # already closed by the client
                connection.shutdown(socket.SHUT_RDWR)


class _Dropped(Exception):
    """The scripted reply asked for the connection to be cut here."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 30  # an idle keep-alive connection must not pin a thread forever
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        pass  # tests read requests from .requests, not from stderr

    # -- routing ---------------------------------------------------------------------------------

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            model = {"id": self.server.owner.model, "object": "model", "created": 0, "owned_by": "bub_nb"}
            self._send_json(200, {"object": "list", "data": [model]})
        else:
            self._send_json(404, _error_body(f"Unknown path {self.path!r}", "invalid_request_error", "not_found"))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._send_json(404, _error_body(f"Unknown path {self.path!r}", "invalid_request_error", "not_found"))
            return
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = raw.decode("utf-8", "replace")
        owner = self.server.owner
        owner._record(body)
        problem = _request_problem(body)
        if problem is not None:
            self._send_json(400, _error_body(problem, "invalid_request_error"))
            return
        overflow = owner._overflow(body["messages"])
        if overflow is not None:
            self._send_json(400, overflow)
            return
        reply = owner._next_reply()
        try:
            self._answer(body, reply)
        except (_Dropped, ConnectionError, TimeoutError):
            self.close_connection = True  # the client gave up or the script cut the line

    # -- answering -------------------------------------------------------------------------------

    def _answer(self, body: dict[str, Any], reply: ScriptedReply) -> None:
        if reply.delay and self.server.stopping.wait(reply.delay):
            raise _Dropped
        if reply.status != 200:
            self._send_json(reply.status, dict(reply.error or {}), reply.headers)
            return
        if body.get("stream"):
            self._stream(body, reply)
        else:
            self._complete(body, reply)

    def _usage(self, body: dict[str, Any], reply: ScriptedReply) -> dict[str, int]:
        if reply.usage is not None:
            usage = _usage_dict(reply.usage)
            assert usage is not None
            return usage
        from bub_nb.context.tokens import count_messages_tokens, count_text_tokens

        prompt = count_messages_tokens(body["messages"])
        completion = count_text_tokens(reply.text + "".join(c["function"]["arguments"] for c in reply.tool_calls))
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}

    def _finish_reason(self, reply: ScriptedReply) -> str:
        return reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")

    def _complete(self, body: dict[str, Any], reply: ScriptedReply) -> None:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None, "refusal": None}
        if reply.tool_calls:
            message["tool_calls"] = [dict(call) for call in reply.tool_calls]
        payload = {
            "id": self.server.owner._completion_id(), "object": "chat.completion", "created": int(time.time()),
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": self._finish_reason(reply),
                         "logprobs": None}],
            "usage": self._usage(body, reply),
        }
        data = json.dumps(payload).encode()
        if reply.drop_after is not None:  # a body cut short: the client sees an incomplete read
            self._send_head(200, "application/json", {"Content-Length": str(len(data))})
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self._cut()
        self._send_head(200, "application/json", {"Content-Length": str(len(data))})
        self.wfile.write(data)

    def _stream(self, body: dict[str, Any], reply: ScriptedReply) -> None:
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        base = {"id": self.server.owner._completion_id(), "object": "chat.completion.chunk",
                "created": int(time.time()), "model": body["model"]}

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
            choice = {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}
            data: dict[str, Any] = {**base, "choices": [choice]}
            if include_usage:
                data["usage"] = None
            return data

        deltas: list[dict[str, Any]] = [{"content": piece} for piece in _WORDS.findall(reply.text)]
        for index, call in enumerate(reply.tool_calls):
            arguments = call["function"]["arguments"]
            deltas.append({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                           "function": {"name": call["function"]["name"], "arguments": ""}}]})
            deltas.extend({"tool_calls": [{"index": index, "function": {"arguments": arguments[i:i + 8]}}]}
                          for i in range(0, len(arguments), 8))
        events = [chunk({"role": "assistant", "content": ""})]
        events.extend(chunk(delta) for delta in deltas)
        events.append(chunk({}, self._finish_reason(reply)))
        if include_usage:
            events.append({**base, "choices": [], "usage": self._usage(body, reply)})

        self._send_head(200, "text/event-stream", {"Transfer-Encoding": "chunked", "Cache-Control": "no-cache"})
        for sent, event in enumerate(events):
            # chunk 0 carries only the role, so drop_after=N cuts after N pieces of content
            if reply.drop_after is not None and sent > reply.drop_after:
                self._cut()
            self._write_chunk(f"data: {json.dumps(event)}\n\n".encode())
            if reply.chunk_delay and sent and self.server.stopping.wait(reply.chunk_delay):
                raise _Dropped
        self._write_chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    # -- the wire --------------------------------------------------------------------------------

    def _send_head(self, status: int, content_type: str, headers: Mapping[str, str]) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()

    def _send_json(self, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self._send_head(status, "application/json", {**(headers or {}), "Content-Length": str(len(data))})
        self.wfile.write(data)

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _cut(self) -> None:
        self.wfile.flush()
        self.connection.shutdown(socket.SHUT_RDWR)
        raise _Dropped


class OpenAICompatibleServer:
    """An OpenAI-compatible endpoint on 127.0.0.1 with a scripted FIFO of replies (see the module doc).

    Use it as a context manager, or call :meth:`start` and :meth:`stop`. ``base_url`` is what the
    openai client takes (``http://127.0.0.1:PORT/v1``); ``requests`` holds every request body.
    """

    def __init__(self, *, context_window: int | None = None, model: str = "bub-nb-test",
                 default_text: str = DEFAULT_TEXT) -> None:
        self.context_window = context_window
        self.model = model
        self.default_text = default_text
        self._lock = threading.Lock()
        self._script: deque[ScriptedReply] = deque()
        self._requests: list[Any] = []
        self._ids = itertools.count(1)
        self._call_ids = itertools.count(1)
        self._http: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> OpenAICompatibleServer:
        if self._http is not None:
            return self
        self._http = _HTTPServer(self)
        self._thread = threading.Thread(target=self._http.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"bub-nb-test-endpoint:{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, cut open connections and join every thread the server started."""
        http, thread = self._http, self._thread
        if http is None or thread is None:
            return
        self._http = self._thread = None
        http.stopping.set()
        http.shutdown()
        http.close_connections()
        http.server_close()
        thread.join(timeout=5)
        with http.tracked_lock:
            handlers = list(http.threads)
        for handler in handlers:
            handler.join(timeout=5)
        alive = [t.name for t in (thread, *handlers) if t.is_alive()]
        if alive:
            raise RuntimeError(f"the local test endpoint could not stop threads: {', '.join(alive)}")

    def __enter__(self) -> OpenAICompatibleServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
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

    # -- scripting -------------------------------------------------------------------------------

    def reply(self, text: str, *, usage: Mapping[str, int] | Any = None, delay: float = 0.0,
              chunk_delay: float = 0.0, finish_reason: str | None = None) -> OpenAICompatibleServer:
        """Answer the next request with ``text`` (streamed one word per chunk).

        Without ``usage`` the reply reports token estimates; ``chunk_delay`` paces a stream.
        """
        return self._push(ScriptedReply(text=text, usage=_usage_dict(usage), delay=delay,
                                        chunk_delay=chunk_delay, finish_reason=finish_reason))

    def reply_tool_calls(self, calls: Iterable[Mapping[str, Any]], *, content: str = "",
                         usage: Mapping[str, int] | Any = None, delay: float = 0.0) -> OpenAICompatibleServer:
        """Answer the next request with tool calls: ``[{"name", "arguments": dict | str, "id"?}]``."""
        tool_calls = []
        for call in calls:
            arguments = call.get("arguments", {})
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments)
            call_id = call.get("id") or f"call_{next(self._call_ids)}"
            tool_calls.append({"id": call_id, "type": "function",
                               "function": {"name": call["name"], "arguments": arguments}})
        if not tool_calls:
            raise ValueError("reply_tool_calls needs at least one call")
        return self._push(ScriptedReply(text=content, tool_calls=tuple(tool_calls), usage=_usage_dict(usage),
                                        delay=delay))

    def fail(self, status: int, message: str | None = None, *, code: str | None = None,
             error_type: str | None = None, retry_after: float | None = _RETRY_AFTER,
             delay: float = 0.0) -> OpenAICompatibleServer:
        """Answer the next request with an HTTP error and an OpenAI-shaped error body.

        Retryable statuses (408, 409, 429, 5xx) carry ``Retry-After`` and ``retry-after-ms`` headers
        (``retry_after`` seconds; None leaves them out and the client falls back on its own backoff).
        """
        server_side = status >= 500
        default_type = "server_error" if server_side else "requests" if status == 429 else "invalid_request_error"
        if status == 429 and code is None:
            code = "rate_limit_exceeded"
        headers: dict[str, str] = {}
        if retry_after is not None and (status in (408, 409, 429) or server_side):
            headers = {"Retry-After": str(max(1, math.ceil(retry_after))),
                       "retry-after-ms": str(max(1, round(retry_after * 1000)))}
        error = _error_body(message or _STATUS_MESSAGES.get(status, f"HTTP {status} from the local test endpoint"),
                            error_type or default_type, code)
        return self._push(ScriptedReply(status=status, error=error, headers=headers, delay=delay))

    def fail_context_length(self, limit: int = 8192, requested: int | None = None) -> OpenAICompatibleServer:
        """Answer the next request with OpenAI's 400 ``context_length_exceeded`` error."""
        requested = requested if requested is not None else limit + 1000
        return self._push(ScriptedReply(status=400, error=_context_length_error(limit, requested)))

    def delay(self, seconds: float, text: str | None = None) -> OpenAICompatibleServer:
        """Answer the next request only after ``seconds`` (to trigger client timeouts)."""
        return self._push(ScriptedReply(text=self.default_text if text is None else text, delay=seconds))

    def drop_after(self, chunks: int, text: str) -> OpenAICompatibleServer:
        """Stream the first ``chunks`` words of ``text``, then cut the connection mid-stream."""
        return self._push(ScriptedReply(text=text, drop_after=chunks))

    @property
    def pending(self) -> int:
        """Scripted replies not yet consumed."""
        with self._lock:
            return len(self._script)

    @property
    def requests(self) -> list[Any]:
        """A snapshot of every chat request body received, oldest first."""
        with self._lock:
            return list(self._requests)

    @property
    def last_request(self) -> Any:
        requests = self.requests
        if not requests:
            raise LookupError("the local test endpoint has received no chat request yet")
        return requests[-1]

    # -- used by the handler threads -------------------------------------------------------------

    def _push(self, reply: ScriptedReply) -> OpenAICompatibleServer:
        with self._lock:
            self._script.append(reply)
        return self

    def _next_reply(self) -> ScriptedReply:
        with self._lock:
            if self._script:
                return self._script.popleft()
        return ScriptedReply(text=self.default_text)

    def _record(self, body: Any) -> None:
        with self._lock:
            self._requests.append(body)

    def _completion_id(self) -> str:
        return f"chatcmpl-{next(self._ids)}"

    def _overflow(self, messages: list[dict[str, Any]]) -> dict[str, Any] | None:
        if self.context_window is None:
            return None
        from bub_nb.context.tokens import count_messages_tokens

        tokens = count_messages_tokens(messages)
        return _context_length_error(self.context_window, tokens) if tokens > self.context_window else None


def _context_length_error(limit: int, requested: int) -> dict[str, Any]:
    message = (f"This model's maximum context length is {limit} tokens. However, your messages resulted in "
               f"{requested} tokens. Please reduce the length of the messages.")
    return _error_body(message, "invalid_request_error", "context_length_exceeded", "messages")
