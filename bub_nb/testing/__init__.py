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

``/v1/embeddings`` answers every input with a bag-of-words vector (``embedding_aliases`` maps a word to another
first); ``fail_embeddings(status)`` makes the next one fail, and ``embedding_requests`` holds what came.

An empty script answers at once with a short default text, so the server doubles as an instant
model. ``context_window=N`` refuses any prompt whose estimate exceeds N tokens with the 400 error
OpenAI sends, before the script is consulted. Requests are checked the way OpenAI checks them (tool
messages must answer a pending call, tool names must match ``^[a-zA-Z0-9_-]{1,64}$``); a bad request
gets a 400 ``invalid_request_error`` instead of a scripted reply. Retryable faults carry a
``retry-after-ms`` header (10 ms by default), which the openai client honours instead of its own
backoff, so retries cost milliseconds in tests.
"""

from __future__ import annotations

from bub_nb.testing.script import DEFAULT_TEXT, ScriptedReply
from bub_nb.testing.server import OpenAICompatibleServer

__all__ = ["DEFAULT_TEXT", "OpenAICompatibleServer", "ScriptedReply"]
