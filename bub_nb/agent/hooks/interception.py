"""Bub's interception hooks around the agent loop's model and tool calls, with Bub's contracts and semantics.

The values are Bub 0.5.1's (``bub.hooks.interception``) field for field, so a plugin written for Bub reads and
``dataclasses.replace``-s them as it would there; the decisions a plugin returns are read by their fields, so Bub's
own ``LlmCallDecision`` and ``ToolCallDecision`` work as well as these. As in Bub, a hook that raises or returns
something else is logged and skipped: these hooks observe and steer, they never break a turn.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from bub_nb.agent.hooks.runtime import HookRuntime

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class LlmCallRequest:
    """One model call of the agent loop, as ``before_llm_call`` sees it."""

    run_id: str
    model: str
    messages: list[dict[str, Any]]
    tool_names: tuple[str, ...] = ()
    max_tokens: int | None = None


@dataclass(frozen=True)
class LlmCallResult:
    """How one model call ended, as ``after_llm_call`` sees it (``error`` set when it raised)."""

    run_id: str
    text: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, Any] | None = None
    error: Exception | None = None
    duration_ms: int = 0


@dataclass(frozen=True)
class LlmCallDecision:
    """``before_llm_call``'s verdict: skip the call and answer with ``text``."""

    action: Literal["finish"] = "finish"
    text: str = ""

    @classmethod
    def finish(cls, text: str) -> LlmCallDecision:
        return cls(action="finish", text=text)


@dataclass(frozen=True)
class ToolCall:
    """One tool call, as ``before_tool_call`` and ``after_tool_call`` see it."""

    run_id: str
    tool: str
    arguments: dict[str, Any]
    context: Any = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class ToolCallDecision:
    """``before_tool_call``'s verdict: ``proceed`` (maybe with new arguments), ``replace`` or ``deny``."""

    action: Literal["proceed", "replace", "deny"] = "proceed"
    arguments: dict[str, Any] | None = None
    result: Any = None
    message: str | None = None

    @classmethod
    def proceed(cls, arguments: dict[str, Any] | None = None) -> ToolCallDecision:
        return cls(action="proceed", arguments=arguments)

    @classmethod
    def replace(cls, result: Any) -> ToolCallDecision:
        return cls(action="replace", result=result)

    @classmethod
    def deny(cls, message: str) -> ToolCallDecision:
        return cls(action="deny", message=message)


@dataclass
class ToolCallResult:
    """How one tool call ended; ``after_tool_call`` may replace ``result``, what the model reads."""

    run_id: str
    tool: str
    arguments: dict[str, Any]
    result: Any = None
    error: Exception | None = None
    duration_ms: int = 0


_SKIP = object()


async def before_llm_call(
    hooks: HookRuntime, request: LlmCallRequest, state: dict[str, Any]
) -> tuple[LlmCallRequest, str | None]:
    """The request as the chain leaves it, and the text a ``finish`` decision answers with (else ``None``)."""
    for impl in hooks.implementations("before_llm_call"):
        value = await _safe(impl, {"request": request, "state": state})
        if value is None or value is _SKIP:
            continue
        if getattr(value, "action", None) == "finish":
            return request, str(getattr(value, "text", "") or "")
        if _is_request(value):
            request = LlmCallRequest(
                run_id=str(value.run_id),
                model=str(value.model),
                messages=list(value.messages),
                tool_names=tuple(value.tool_names),
                max_tokens=value.max_tokens,
            )
        else:
            _bad_return("before_llm_call", impl, value, "LlmCallRequest | LlmCallDecision | None")
    return request, None


async def before_tool_call(hooks: HookRuntime, call: ToolCall, state: dict[str, Any]) -> tuple[ToolCall, Any]:
    """The call as the chain leaves it, and the decision that ended the chain (``None``: proceed)."""
    for impl in hooks.implementations("before_tool_call"):
        value = await _safe(impl, {"call": call, "state": state})
        if value is None or value is _SKIP:
            continue
        action = getattr(value, "action", None)
        if action == "proceed":
            arguments = getattr(value, "arguments", None)
            if isinstance(arguments, dict):
                call = dataclasses.replace(call, arguments=dict(arguments))
        elif action in ("replace", "deny"):
            return call, value
        else:
            _bad_return("before_tool_call", impl, value, "ToolCallDecision | None")
    return call, None


async def observe(hooks: HookRuntime, hook: str, **arguments: Any) -> None:
    """Call every implementation of ``after_llm_call`` or ``after_tool_call``; one that raises is logged."""
    for impl in hooks.implementations(hook):
        await _safe(impl, arguments)


async def _safe(impl: Any, arguments: dict[str, Any]) -> Any:
    from bub_nb.agent.hooks.runtime import invoke

    try:
        return await invoke(impl, arguments)
    except Exception:
        logger.warning("The %s hook of plugin %r failed", impl.function.__name__, impl.plugin_name, exc_info=True)
        return _SKIP


def _is_request(value: Any) -> bool:
    return all(hasattr(value, name) for name in ("run_id", "model", "messages", "tool_names", "max_tokens"))


def _bad_return(hook: str, impl: Any, value: Any, expected: str) -> None:
    logger.warning(
        "The %s hook of plugin %r returned %s, not %s", hook, impl.plugin_name, type(value).__name__, expected
    )
