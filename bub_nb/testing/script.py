"""The script of a local endpoint: queued replies, the request log and the context window."""

from __future__ import annotations

import hashlib
import itertools
import re
import threading
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bub_nb.testing.refusals import context_length_error

DEFAULT_TEXT = "OK: default reply from the local test endpoint."


@dataclass(frozen=True)
class ScriptedReply:
    """One scripted answer: text and/or tool calls, or a fault (``status`` other than 200, ``drop_after``).

    ``tool_calls`` are OpenAI tool_call dicts. ``usage`` None means "report token estimates".
    """

    text: str = ""
    tool_calls: tuple[dict[str, Any], ...] = ()
    usage: Mapping[str, Any] | None = None
    delay: float = 0.0
    chunk_delay: float = 0.0
    status: int = 200
    error: Mapping[str, Any] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    drop_after: int | None = None
    finish_reason: str | None = None
    stream_usage: bool = True
    """False: a stream brings no usage even when asked for it (llama-cpp-python's server)."""
    empty_stream: bool = False
    """A streamed request gets 200 and no event at all (llama-cpp-python's server, when the request fails)."""
    overflow_limit: int | None = None
    """Refuse as over this window, naming the request's own count (``error`` is then made per request)."""
    ping_every: float | None = None
    """Seconds between SSE ``: ping`` comments sent instead of an answer, until the client or the server stops."""
    together: threading.Barrier | None = None
    """Answered only once every request sharing this barrier has arrived: requests held at the same moment."""

    @property
    def finish(self) -> str:
        return self.finish_reason or ("tool_calls" if self.tool_calls else "stop")


_DETAILS = {"cached_tokens": "prompt_tokens_details", "reasoning_tokens": "completion_tokens_details"}


def usage_dict(usage: Any) -> dict[str, Any] | None:
    """OpenAI's usage dict from a mapping or anything with ``as_dict()``; the total defaults to the sum.

    ``cached_tokens`` and ``reasoning_tokens`` given at the top are reported where OpenAI puts them
    (``prompt_tokens_details``, ``completion_tokens_details``); details given in OpenAI's shape pass through.
    """
    if usage is None:
        return None
    data = dict(usage.as_dict() if hasattr(usage, "as_dict") else usage)
    prompt, completion = int(data.get("prompt_tokens", 0)), int(data.get("completion_tokens", 0))
    total = int(data.get("total_tokens", prompt + completion))
    out: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": total}
    for group in _DETAILS.values():
        if isinstance(data.get(group), Mapping):
            out[group] = {name: int(count) for name, count in data[group].items()}
    for name, group in _DETAILS.items():
        if name in data:
            out.setdefault(group, {})[name] = int(data[name])
    return out


EMBEDDING_SIZE = 256
"""Components of the vectors ``/v1/embeddings`` answers with."""
_WORD = re.compile(r"[a-z0-9]{3,}")


def embed_words(text: str, aliases: Mapping[str, str] | None = None) -> list[float]:
    """A bag-of-words vector: each word of three letters or more (``aliases`` first mapping a word to another, as
    a model knows ``kitten`` is near ``cat``) adds one to a component its hash picks."""
    vector = [0.0] * EMBEDDING_SIZE
    for word in _WORD.findall(text.lower()):
        word = (aliases or {}).get(word, word)
        vector[int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "big") % EMBEDDING_SIZE] += 1.0
    return vector


class ReplyScript:
    """A thread-safe FIFO of replies plus the log of every request; handler threads share one."""

    def __init__(
        self, *, model: str, default_text: str, context_window: int | None, api_key: str | None = None
    ) -> None:
        self.api_key = api_key
        self.model = model
        self.default_text = default_text
        self.context_window = context_window
        self._lock = threading.Lock()
        self._replies: deque[ScriptedReply] = deque()
        self._requests: list[Any] = []
        self._completion_ids = itertools.count(1)
        self._call_ids = itertools.count(1)
        self.embedding_aliases: dict[str, str] = {}
        self._embedding_faults: deque[ScriptedReply] = deque()
        self._embedding_requests: list[Any] = []

    def embed(self, text: str) -> list[float]:
        return embed_words(text, self.embedding_aliases)

    def push_embedding_fault(self, fault: ScriptedReply) -> None:
        with self._lock:
            self._embedding_faults.append(fault)

    def next_embedding_fault(self) -> ScriptedReply | None:
        with self._lock:
            return self._embedding_faults.popleft() if self._embedding_faults else None

    def record_embedding(self, body: Any) -> None:
        with self._lock:
            self._embedding_requests.append(body)

    @property
    def embedding_requests(self) -> list[Any]:
        with self._lock:
            return list(self._embedding_requests)

    def push(self, reply: ScriptedReply) -> None:
        with self._lock:
            self._replies.append(reply)

    def next_reply(self) -> ScriptedReply:
        """The next scripted reply, or the default text when the script is empty."""
        with self._lock:
            if self._replies:
                return self._replies.popleft()
        return ScriptedReply(text=self.default_text)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._replies)

    def drop_pending(self) -> int:
        """Forget the replies not used yet; returns how many there were."""
        with self._lock:
            dropped = len(self._replies)
            self._replies.clear()
            return dropped

    def record(self, body: Any) -> None:
        with self._lock:
            self._requests.append(body)

    @property
    def requests(self) -> list[Any]:
        with self._lock:
            return list(self._requests)

    def completion_id(self) -> str:
        return f"chatcmpl-{next(self._completion_ids)}"

    def call_id(self) -> str:
        return f"call_{next(self._call_ids)}"

    def overflow(self, messages: list[dict[str, Any]]) -> dict[str, Any] | None:
        """The context-length error body for a prompt over the window, else None."""
        if self.context_window is None:
            return None
        from bub_nb.context.tokens import count_messages_tokens

        tokens = count_messages_tokens(messages)
        return context_length_error(self.context_window, tokens) if tokens > self.context_window else None
