"""A scripted model endpoint on 127.0.0.1 for the coding CLIs: Anthropic's Messages API and OpenAI's Responses API.

Claude Code calls ``POST /v1/messages?beta=true`` and Codex ``POST /v1/responses``, both streaming. A
``respond`` function the test gives decides each reply from the request body (the CLIs make side requests of
their own, a title or a token count, so a fixed queue would not fit); the server streams it the way the real
APIs do: a text reply in many small deltas, tool input as ``input_json_delta`` pieces, usage that grows from
``message_start`` to ``message_delta``. Every request is kept in ``requests`` (path and body); anything else a
CLI asks for is answered with an empty JSON object and kept too.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_PIECES = re.compile(r"\S+\s*|\s+")


@dataclass(frozen=True)
class Tool:
    """A tool call in a reply: the tool's name and its input."""

    name: str
    input: dict[str, Any]
    namespace: str | None = None
    """The tool namespace a Responses-API call names (Codex groups its sub-agent tools in one)."""


@dataclass(frozen=True)
class Reply:
    """One model reply: text and tool calls in order, and the usage the endpoint reports for it."""

    blocks: tuple[str | Tool, ...]
    input_tokens: int = 100
    output_tokens: int = 20
    cache_read: int = 0

    @staticmethod
    def text(text: str, **usage: int) -> Reply:
        return Reply((text,), **usage)


@dataclass
class Request:
    method: str
    path: str
    body: Any


Respond = Callable[[str, dict[str, Any]], Reply]
"""``respond(api, body)``: the reply to a model request; ``api`` is ``"anthropic"`` or ``"responses"``."""


@dataclass
class CliEndpoint:
    """Start with ``with CliEndpoint(respond) as endpoint:``; ``endpoint.url`` is ``http://127.0.0.1:PORT``."""

    respond: Respond
    requests: list[Request] = field(default_factory=list)
    _ids: Iterator[int] = field(default_factory=itertools.count)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __enter__(self) -> CliEndpoint:
        endpoint = self

        class Handler(_Handler):
            owner = endpoint

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._http.daemon_threads = True
        self._thread = threading.Thread(target=self._http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._http.server_address[1]}"

    def next_id(self) -> int:
        with self._lock:
            return next(self._ids)

    def model_requests(self, api: str) -> list[Request]:
        path = "/v1/messages" if api == "anthropic" else "/v1/responses"
        return [r for r in self.requests if r.path.split("?")[0] == path]


class _Handler(BaseHTTPRequestHandler):
    owner: CliEndpoint
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # the CLIs' requests are kept, not printed
        pass

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return raw.decode("utf-8", "replace")

    def _json(self, status: int, value: Any) -> None:
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def do_HEAD(self) -> None:
        self.owner.requests.append(Request("HEAD", self.path, None))
        self._json(200, {})

    def do_GET(self) -> None:
        self.owner.requests.append(Request("GET", self.path, None))
        if self.path.split("?")[0].endswith("/models"):
            self._json(200, {"object": "list", "data": []})
            return
        self._json(200, {})

    def do_POST(self) -> None:
        body = self._body()
        self.owner.requests.append(Request("POST", self.path, body))
        path = self.path.split("?")[0]
        if path == "/v1/messages/count_tokens":
            self._json(200, {"input_tokens": 100})
        elif path == "/v1/messages" and isinstance(body, dict):
            self._stream(_anthropic_events(self.owner, body))
        elif path == "/v1/responses" and isinstance(body, dict):
            self._stream(_responses_events(self.owner, body))
        else:
            self._json(404, {"error": {"type": "not_found_error", "message": f"No route {path}"}})

    def _stream(self, events: Iterator[tuple[str, dict[str, Any]]]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for name, data in events:
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()
        self.close_connection = True


def _pieces(text: str) -> list[str]:
    return _PIECES.findall(text) or [""]


def _anthropic_events(owner: CliEndpoint, body: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    reply = owner.respond("anthropic", body)
    number = owner.next_id()
    usage = {
        "input_tokens": reply.input_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": reply.cache_read,
        "output_tokens": 1,  # as the API does: message_start holds a first count, message_delta the final one
    }
    message = {
        "id": f"msg_test{number:06d}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "claude-test"),
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    yield "message_start", {"type": "message_start", "message": message}
    for index, block in enumerate(reply.blocks):
        if isinstance(block, str):
            yield "content_block_start", _block_start(index, {"type": "text", "text": ""})
            for piece in _pieces(block):
                delta = {"type": "text_delta", "text": piece}
                yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        else:
            start = {"type": "tool_use", "id": f"toolu_test{number:04d}{index:02d}", "name": block.name, "input": {}}
            yield "content_block_start", _block_start(index, start)
            arguments = json.dumps(block.input)
            for at in range(0, len(arguments), 12):
                delta = {"type": "input_json_delta", "partial_json": arguments[at : at + 12]}
                yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    stop = "tool_use" if any(isinstance(b, Tool) for b in reply.blocks) else "end_turn"
    final = {"output_tokens": reply.output_tokens}
    yield (
        "message_delta",
        {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": final},
    )
    yield "message_stop", {"type": "message_stop"}


def _block_start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def _responses_events(owner: CliEndpoint, body: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    reply = owner.respond("responses", body)
    number = owner.next_id()
    response = {"id": f"resp_test{number:06d}", "object": "response", "status": "in_progress", "output": []}
    yield "response.created", {"type": "response.created", "response": response}
    output: list[dict[str, Any]] = []
    for index, block in enumerate(reply.blocks):
        if isinstance(block, str):
            item_id = f"msg_test{number:04d}{index:02d}"
            added = {"type": "message", "id": item_id, "role": "assistant", "status": "in_progress", "content": []}
            yield (
                "response.output_item.added",
                {"type": "response.output_item.added", "output_index": index, "item": added},
            )
            for piece in _pieces(block):
                delta = {
                    "type": "response.output_text.delta", "item_id": item_id, "output_index": index,
                    "content_index": 0, "delta": piece,
                }  # fmt: skip
                yield "response.output_text.delta", delta
            item: dict[str, Any] = {
                "type": "message", "id": item_id, "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": block, "annotations": []}],
            }  # fmt: skip
        else:
            item = {
                "type": "function_call", "id": f"fc_test{number:04d}{index:02d}",
                "call_id": f"call_test{number:04d}{index:02d}", "name": block.name,
                "arguments": json.dumps(block.input), "status": "completed",
                **({"namespace": block.namespace} if block.namespace else {}),
            }  # fmt: skip
            yield (
                "response.output_item.added",
                {"type": "response.output_item.added", "output_index": index, "item": item},
            )
        output.append(item)
        yield "response.output_item.done", {"type": "response.output_item.done", "output_index": index, "item": item}
    usage = {
        "input_tokens": reply.input_tokens,
        "input_tokens_details": {"cached_tokens": reply.cache_read},
        "output_tokens": reply.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": reply.input_tokens + reply.output_tokens,
    }
    done = {**response, "status": "completed", "output": output, "usage": usage}
    yield "response.completed", {"type": "response.completed", "response": done}
