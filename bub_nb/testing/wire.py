"""Scripted replies on the wire: chat completions as JSON or SSE, faults, and cut connections."""

from __future__ import annotations

import contextlib
import datetime
import json
import re
import socket
import sys
import threading
import time
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from bub_nb.testing.refusals import STATUS_MESSAGES, context_length_error, error_body, request_problem
from bub_nb.testing.script import ReplyScript, ScriptedReply, usage_dict

_TOGETHER_TIMEOUT = 60.0
"""Seconds a held request waits for the others before it is refused (only a broken test ever waits this long)."""

THREAD_PREFIX = "bub-nb-test-endpoint"
_WORDS = re.compile(r"\s*\S+\s*|\s+")
SSE_HEADERS = {"Transfer-Encoding": "chunked", "Cache-Control": "no-store", "X-Accel-Buffering": "no"}
_ARGUMENT_PIECE = 8  # characters of tool arguments per streamed delta, so arguments arrive in several deltas


class EndpointHTTPServer(ThreadingHTTPServer):
    """Serves a :class:`ReplyScript` on 127.0.0.1, tracking connections and threads so all can be stopped."""

    daemon_threads = True
    block_on_close = False  # stop() joins the threads itself, after cutting their connections

    def __init__(self, script: ReplyScript) -> None:
        self.script = script
        self.stopping = threading.Event()
        self.tracked_lock = threading.Condition()  # notified whenever a connection closes
        self.connections: set[socket.socket] = set()
        self.threads: set[threading.Thread] = set()
        super().__init__(("127.0.0.1", 0), ChatHandler)

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(
            target=self.process_request_thread,
            args=(request, client_address),
            name=f"{THREAD_PREFIX}-{client_address[1]}",
            daemon=True,
        )
        with self.tracked_lock:
            self.threads = {t for t in self.threads if t.is_alive()}
            self.threads.add(thread)
            self.connections.add(request)
        thread.start()

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up (a cancelled stream, a timed-out call) is normal here, not a server fault.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self.tracked_lock:
            self.connections.discard(request)
            self.tracked_lock.notify_all()
        super().shutdown_request(request)

    def close_connections(self) -> None:
        with self.tracked_lock:
            connections = list(self.connections)
        for connection in connections:
            with contextlib.suppress(OSError):  # already closed by the client
                connection.shutdown(socket.SHUT_RDWR)

    def handler_threads(self) -> list[threading.Thread]:
        with self.tracked_lock:
            return list(self.threads)


class _Dropped(Exception):
    """The scripted reply asked for the connection to be cut here."""


class ChatHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as separate writes; Nagle would hold each ~40 ms
    timeout = 30  # an idle keep-alive connection must not pin a thread forever
    server: EndpointHTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        pass  # tests read requests from the script's log, not from stderr

    # -- routing ---------------------------------------------------------------------------------

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            model = {"id": self.server.script.model, "object": "model", "created": 0, "owned_by": "bub_nb"}
            self._send_json(200, {"object": "list", "data": [model]})
        else:
            self._send_json(404, error_body(f"Unknown path {self.path!r}", "invalid_request_error", "not_found"))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        embeddings = self.path.rstrip("/") in ("/v1/embeddings", "/embeddings")
        if not embeddings and self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._send_json(404, error_body(f"Unknown path {self.path!r}", "invalid_request_error", "not_found"))
            return
        expected = self.server.script.api_key
        if expected is not None and self.headers.get("Authorization") != f"Bearer {expected}":
            # As OpenAI answers a wrong key: refused before the request is read or recorded.
            self._send_json(401, error_body(STATUS_MESSAGES[401], "invalid_request_error", "invalid_api_key"))
            return
        if embeddings:
            self._embeddings(raw)
            return
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = raw.decode("utf-8", "replace")
        script = self.server.script
        script.record(body)
        problem = request_problem(body)
        if problem is not None:
            self._send_json(400, error_body(problem, "invalid_request_error"))
            return
        overflow = script.overflow(body["messages"])
        if overflow is not None:  # refused before the script is consulted, as a real endpoint would
            self._send_json(400, overflow)
            return
        try:
            self._answer(body, script.next_reply())
        except (_Dropped, ConnectionError, TimeoutError):
            self.close_connection = True  # the client gave up, the script cut the line, or the server stops

    def _embeddings(self, raw: bytes) -> None:
        """``/v1/embeddings``: each input's words hashed into a vector (:func:`~bub_nb.testing.script.embed_words`),
        so texts that share words are near; a queued embedding fault answers instead."""
        script = self.server.script
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = None
        if not isinstance(body, dict) or not isinstance(body.get("model"), str) or "input" not in body:
            self._send_json(400, error_body("'model' and 'input' are required", "invalid_request_error"))
            return
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        script.record_embedding(body)
        fault = script.next_embedding_fault()
        if fault is not None:
            self._send_json(fault.status, dict(fault.error or {}), fault.headers)
            return
        if not all(isinstance(text, str) and text for text in texts):
            self._send_json(400, error_body("every input must be a non-empty string", "invalid_request_error"))
            return
        data = [
            {"object": "embedding", "index": index, "embedding": script.embed(text)} for index, text in enumerate(texts)
        ]
        from bub_nb.context.tokens import count_text_tokens

        tokens = sum(count_text_tokens(text) for text in texts)
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        self._send_json(200, {"object": "list", "data": data, "model": body["model"], "usage": usage})

    # -- answering -------------------------------------------------------------------------------

    def _answer(self, body: dict[str, Any], reply: ScriptedReply) -> None:
        if reply.together is not None:
            try:
                reply.together.wait(_TOGETHER_TIMEOUT)
            except threading.BrokenBarrierError:
                self._send_json(503, error_body("the other held requests never came", "server_error"))
                return
        if reply.delay and self.server.stopping.wait(reply.delay):
            raise _Dropped
        if reply.overflow_limit is not None:
            from bub_nb.context.tokens import count_messages_tokens

            counted = count_messages_tokens(body["messages"])
            self._send_json(400, context_length_error(reply.overflow_limit, counted))
        elif reply.status != 200:
            self._send_json(reply.status, dict(reply.error or {}), reply.headers)
        elif reply.ping_every is not None:
            self._ping(reply.ping_every)
        elif reply.empty_stream and body.get("stream"):
            self._send_head(200, "text/event-stream; charset=utf-8", SSE_HEADERS)
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        elif body.get("stream"):
            self._stream(body, reply)
        else:
            self._complete(body, reply)

    def _usage(self, body: dict[str, Any], reply: ScriptedReply) -> dict[str, Any]:
        usage = usage_dict(reply.usage)
        if usage is not None:
            return usage
        from bub_nb.context.tokens import count_messages_tokens, count_text_tokens

        prompt = count_messages_tokens(body["messages"])
        completion = count_text_tokens(reply.text + "".join(c["function"]["arguments"] for c in reply.tool_calls))
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}

    def _complete(self, body: dict[str, Any], reply: ScriptedReply) -> None:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None, "refusal": None}
        if reply.tool_calls:
            message["tool_calls"] = [dict(call) for call in reply.tool_calls]
        choice = {"index": 0, "message": message, "finish_reason": reply.finish, "logprobs": None}
        payload = {
            "id": self.server.script.completion_id(),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body["model"],
            "choices": [choice],
            "usage": self._usage(body, reply),
        }
        data = json.dumps(payload).encode()
        self._send_head(200, "application/json", {"Content-Length": str(len(data))})
        if reply.drop_after is not None:  # a body cut short: the client sees an incomplete read
            self.wfile.write(data[: len(data) // 2])
            self._cut()
        self.wfile.write(data)

    def _stream_events(self, body: dict[str, Any], reply: ScriptedReply) -> list[dict[str, Any]]:
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        base = {
            "id": self.server.script.completion_id(),
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body["model"],
        }

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
            choice = {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}
            return {**base, "choices": [choice], **({"usage": None} if include_usage else {})}

        events = [chunk({"role": "assistant", "content": ""})]
        events.extend(chunk({"content": piece}) for piece in _WORDS.findall(reply.text))
        for index, call in enumerate(reply.tool_calls):
            function, arguments = call["function"], call["function"]["arguments"]
            opening = {"index": index, "id": call["id"], "type": "function", "function": {**function, "arguments": ""}}
            events.append(chunk({"tool_calls": [opening]}))
            events.extend(
                chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments[i : i + _ARGUMENT_PIECE]}}]})
                for i in range(0, len(arguments), _ARGUMENT_PIECE)
            )
        events.append(chunk({}, reply.finish))
        if include_usage and reply.stream_usage:
            events.append({**base, "choices": [], "usage": self._usage(body, reply)})
        return events

    def _stream(self, body: dict[str, Any], reply: ScriptedReply) -> None:
        events = self._stream_events(body, reply)
        # chunked encoding, so a cut before the last chunk is a protocol error the client notices
        self._send_head(200, "text/event-stream", {"Transfer-Encoding": "chunked", "Cache-Control": "no-cache"})
        for sent, event in enumerate(events):
            # event 0 carries only the role, so drop_after=N cuts after N pieces of content
            if reply.drop_after is not None and sent > reply.drop_after:
                self._cut()
            self._write_chunk(f"data: {json.dumps(event)}\n\n".encode())
            if reply.chunk_delay and sent and self.server.stopping.wait(reply.chunk_delay):
                raise _Dropped
        self._write_chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _ping(self, every: float) -> None:
        """What sse-starlette (under llama-cpp-python's server) sends while a request waits: comments only."""
        self._send_head(200, "text/event-stream; charset=utf-8", SSE_HEADERS)
        while not self.server.stopping.wait(every):
            stamp = datetime.datetime.now(datetime.UTC)
            self._write_chunk(f": ping - {stamp}\n\n".encode())
        raise _Dropped

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
