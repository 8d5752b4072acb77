"""The OpenTelemetry GenAI semantic-convention names an export writes, and the ids and times it derives."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from typing import Final

SEMCONV_VERSION: Final = "1.44.0"
"""The OpenTelemetry semantic conventions release whose GenAI attributes the export follows (development status),
with ``gen_ai.conversation.compacted`` from the GenAI registry that came after it."""

SCHEMA_URL: Final = f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}"

OPERATION: Final = "gen_ai.operation.name"
PROVIDER: Final = "gen_ai.provider.name"
AGENT_NAME: Final = "gen_ai.agent.name"
CONVERSATION: Final = "gen_ai.conversation.id"
COMPACTED: Final = "gen_ai.conversation.compacted"
REQUEST_MODEL: Final = "gen_ai.request.model"
RESPONSE_MODEL: Final = "gen_ai.response.model"
FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
CACHE_READ_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
CACHE_CREATION_TOKENS: Final = "gen_ai.usage.cache_creation.input_tokens"
REASONING_TOKENS: Final = "gen_ai.usage.reasoning.output_tokens"
TOOL_NAME: Final = "gen_ai.tool.name"
TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
TOOL_TYPE: Final = "gen_ai.tool.type"
TOOL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
TOOL_RESULT: Final = "gen_ai.tool.call.result"
INPUT_MESSAGES: Final = "gen_ai.input.messages"
OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
SYSTEM_INSTRUCTIONS: Final = "gen_ai.system_instructions"
ERROR_TYPE: Final = "error.type"

INVOKE_AGENT: Final = "invoke_agent"
CHAT: Final = "chat"
EXECUTE_TOOL: Final = "execute_tool"

AGENT: Final = "bub"
"""``gen_ai.agent.name``: the agent every bub_nb turn runs, as its system prompt names it."""

LOCAL_MODELS: Final = ("offline", "scripted")
"""Models that run inside bub_nb, with no endpoint behind them: their provider is ``bub_nb``."""


def provider_and_model(model: str) -> tuple[str, str]:
    """``gen_ai.provider.name`` and the model name for a ``run`` event's ``model``.

    ``offline`` and ``scripted`` run in bub_nb; Anthropic's ``claude-*`` models (an imported Claude Code log's)
    are ``anthropic``; every other model is reached through the ``openai`` client, written either bare
    (``gpt-4o-mini``) or as a spec (``openai:gpt-4o-mini``).
    """
    if model in LOCAL_MODELS:
        return "bub_nb", model
    prefix, colon, rest = model.partition(":")
    if colon and prefix in ("openai", "anthropic") and rest:
        return prefix, rest
    if model.startswith("claude-"):  # Anthropic's models, as an imported Claude Code log names them
        return "anthropic", model
    return "openai", model


def producer_version() -> str:
    """bub_nb's version, as its installed metadata gives it (the export names its producer)."""
    try:
        return version("bub_nb")
    except PackageNotFoundError:
        return "0+unknown"


def _digest(*parts: object) -> bytes:
    return hashlib.sha256("\x1f".join(str(part) for part in parts).encode()).digest()


def trace_id(tape: str, entry_id: int) -> int:
    """A turn's trace id: 16 bytes from the tape's name and its first entry's id (never zero)."""
    return int.from_bytes(_digest("bub_nb.trace", tape, entry_id)[:16], "big") or 1


def span_id(tape: str, entry_id: int, role: str, index: int = 0) -> int:
    """A span's id: 8 bytes from the tape's name, the entry it stands for, what it is and which call."""
    return int.from_bytes(_digest("bub_nb.span", tape, entry_id, role, index)[:8], "big") or 1


def parse_date(date: str) -> datetime | None:
    """An entry's ISO-8601 date, aware (no zone is UTC, as Bub writes); ``None`` for text that is no date."""
    try:
        when = datetime.fromisoformat(date.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def nanos(date: str, fallback: int = 0) -> int:
    """An entry's date as Unix nanoseconds; ``fallback`` (the time before it) for a date that is not one."""
    when = parse_date(date)
    if when is None:
        return fallback
    delta = when - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000


EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
