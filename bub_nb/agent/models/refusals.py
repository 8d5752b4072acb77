"""What OpenAI-compatible servers answer when they refuse: context overflows, the window they name, lasting failures.

Each wording is one a server sends (docs/configuration.md#servers lists them by server):

- OpenAI and vLLM: ``This model's maximum context length is 8192 tokens. However, ...`` (400,
  ``code: context_length_exceeded`` at OpenAI); newer vLLM also ``... is longer than the maximum model
  length of 4096``. llama-cpp-python's server words its overflow as OpenAI does.
- llama.cpp's ``llama-server``: ``request (452 tokens) exceeds the available context size (256 tokens),
  try increasing it`` (400, ``type: exceed_context_size_error``, with ``n_ctx`` and ``n_prompt_tokens``).
- Ollama: ``... exceeds the context length`` where it refuses rather than truncates.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CONTEXT_LENGTH_PATTERNS",
    "LASTING_FAILURES",
    "Refusal",
    "is_context_length_error",
    "lasting_failure",
    "mark_lasting_failure",
    "read_refusal",
    "reported_window",
]

CONTEXT_LENGTH_PATTERNS = (
    "context length",
    "maximum context",
    "token limit",
    "prompt too long",
    "context_length_exceeded",
    "context window",
    "context size",
    "exceed_context_size",
    "maximum model length",
)

_WINDOWS = (
    re.compile(r"maximum context length is\s*(\d+)", re.I),
    re.compile(r"available context size \((\d+) tokens?\)", re.I),
    re.compile(r"maximum model length (?:of|is)\s*(\d+)", re.I),
    re.compile(r"context (?:window|size|length)(?: of| is)?\s*\(?(\d+)", re.I),
)
_SENT = (
    re.compile(r"request \((\d+) tokens?\) exceeds", re.I),
    re.compile(r"your messages resulted in (\d+) tokens", re.I),
    re.compile(r"\((\d+) in the messages", re.I),
    re.compile(r"your request has (\d+) input tokens", re.I),
    re.compile(r"prompt \(length (\d+)\)", re.I),
    re.compile(r"prompt too long: (\d+) tokens", re.I),  # the offline model's own wording
)

LASTING_FAILURES: tuple[tuple[str, str], ...] = (
    (
        "tools param requires --jinja",
        "this server cannot take tools: run the cell with --tools none, or start llama-server with --jinja",
    ),
    (
        "try using --jinja",
        "this server cannot apply the model's chat template: start llama-server with --jinja",
    ),
    (
        "llama_decode returned",
        "the answer ran to the end of the server's context window: hand off so the view starts smaller, "
        "or start the server with a larger --ctx-size",
    ),
    (
        "does not support tools",
        "this model cannot take tools: run the cell with --tools none, or pick a model that supports them",
    ),
)
"""Server errors (5xx) that the same request always gets again, and what to do instead of retrying."""


@dataclass(frozen=True, slots=True)
class Refusal:
    """What an error body tells: the server's message and code, the window it names, the tokens it counted."""

    message: str
    code: str | None = None
    window: int | None = None
    sent: int | None = None

    @property
    def context_length(self) -> bool:
        return is_context_length_error(self.message, self.code)


def is_context_length_error(message: str, code: str | None = None) -> bool:
    """Whether an endpoint's error means the prompt did not fit the model's context."""
    text = f"{code or ''} {message}".lower()
    return any(pattern in text for pattern in CONTEXT_LENGTH_PATTERNS)


def reported_window(message: str) -> int | None:
    """The context window in tokens an endpoint's refusal names ("maximum context length is 8192"), if any."""
    for pattern in _WINDOWS:
        found = pattern.search(message)
        if found:
            return int(found.group(1))
    return None


def reported_prompt(message: str) -> int | None:
    """The prompt tokens an endpoint's refusal says it counted, if it says."""
    for pattern in _SENT:
        found = pattern.search(message)
        if found:
            return int(found.group(1))
    return None


def read_refusal(body: Any, fallback: str, code: str | None = None) -> Refusal:
    """The refusal in an error ``body`` (OpenAI's ``{"error": {...}}``, a bare object, or text)."""
    message = fallback
    fields: Mapping[str, Any] = {}
    if isinstance(body, Mapping):
        error = body.get("error", body)
        if isinstance(error, Mapping):
            fields = error
            if code is None:
                named = error.get("code") if isinstance(error.get("code"), str) else error.get("type")
                code = str(named) if named is not None else None
            if isinstance(error.get("message"), str):
                message = error["message"]
        elif isinstance(error, str) and error.strip():  # Ollama's native {"error": "..."}
            message = error.strip()
    elif isinstance(body, str) and body.strip():
        message = body.strip()
    window = _whole(fields.get("n_ctx")) or reported_window(message)
    sent = _whole(fields.get("n_prompt_tokens")) or reported_prompt(message)
    return Refusal(message, code, window, sent)


def lasting_failure(text: str) -> str | None:
    """The advice for a server error the same request would always get again; None for one worth retrying."""
    lowered = text.lower()
    return next((advice for wording, advice in LASTING_FAILURES if wording.lower() in lowered), None)


async def mark_lasting_failure(response: Any) -> None:
    """An HTTP response hook telling the openai client not to retry a server error the same request gets again."""
    if response.status_code < 500:
        return
    await response.aread()
    if lasting_failure(response.text) is not None:
        response.headers["x-should-retry"] = "false"  # a header the openai client obeys


def _whole(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None
