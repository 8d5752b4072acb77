"""What plugins answer about a session and its process, as Bub 0.5.1 asks: admission, model choices, the
environment tools run processes in, and the resources a plugin owns while the kernel runs.

The values have the fields of Bub's (``AdmitDecision``, ``TurnSnapshot``, ``ModelChoice``, ``ModelOptions``) and
are read by those fields, so a plugin written for Bub answers with its own classes and is understood here.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from bub_nb.errors import PipelineError

logger = logging.getLogger(__name__)

ENVIRONMENT_STATE_KEY = "_runtime_environment"
"""Where Bub's tools find the session's environment in their context's state; bub_nb puts it there too, and
under ``"environment"``."""

AdmitAction = Literal["process", "drop", "follow_up", "steer"]
ADMIT_ACTIONS = ("process", "drop", "follow_up", "steer")


@dataclass(frozen=True)
class AdmitDecision:
    """What an ``admit_message`` hook decided for one inbound message; ``drop`` refuses it."""

    action: AdmitAction
    reason: str | None = None


@dataclass(frozen=True)
class TurnSnapshot:
    """The session's turns as an ``admit_message`` hook sees them. A kernel runs one cell at a time, so nothing
    is pending or steering; ``is_running`` tells a turn started from another thread while one runs."""

    session_id: str
    is_running: bool
    running_count: int
    pending_count: int = 0
    steering_count: int = 0


class NotAdmitted(PipelineError):
    """An ``admit_message`` hook dropped the inbound message: nothing was written for it."""


def admission_of(decision: Any, plugin: str) -> tuple[str, str | None]:
    """A decision's action and reason, read by their fields; anything else is refused in one line."""
    action = getattr(decision, "action", None)
    if action not in ADMIT_ACTIONS:
        raise PipelineError(
            f"admit_message of plugin {plugin!r} answered {decision!r}; it answers None or an AdmitDecision whose "
            f"action is one of {', '.join(ADMIT_ACTIONS)}"
        )
    reason = getattr(decision, "reason", None)
    return str(action), None if reason is None else str(reason)


@dataclass(frozen=True)
class ModelChoice:
    """One model a session may use."""

    id: str
    name: str | None = None
    description: str | None = None
    meta: dict[str, Any] | None = None


@dataclass(frozen=True)
class ModelOptions:
    """The model choices of a session and the one selected, merged from every plugin's answer."""

    models: list[ModelChoice] = field(default_factory=list)
    current_model: str | None = None


def merge_model_options(answers: Iterable[Any]) -> ModelOptions:
    """Every answer's choices in hook order, and the first answer's current model, as Bub merges them.

    A choice is read by its fields (Bub's ``ModelChoice`` works); an answer without ``models`` is refused."""
    models: list[ModelChoice] = []
    current: str | None = None
    for answer in answers:
        if answer is None:
            continue
        choices = getattr(answer, "models", None)
        if choices is None or isinstance(choices, str | bytes | Mapping):
            raise PipelineError(f"provide_model_options answered {answer!r}; it answers None or a ModelOptions")
        for choice in choices:
            ident = getattr(choice, "id", None)
            if not isinstance(ident, str) or not ident:
                raise PipelineError(f"provide_model_options answered a choice without an id: {choice!r}")
            meta = getattr(choice, "meta", None)
            models.append(
                ModelChoice(
                    ident,
                    _text(getattr(choice, "name", None)),
                    _text(getattr(choice, "description", None)),
                    dict(meta) if isinstance(meta, Mapping) else None,
                )
            )
        current = current or _text(getattr(answer, "current_model", None))
    return ModelOptions(models, current)


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


async def close_environment(environment: Any) -> None:
    """Close an environment as Bub does at the end of ``framework.running()``: its ``close()``, awaited when it is a
    coroutine; one that fails is logged, the others still close."""
    close = getattr(environment, "close", None)
    if close is None:
        return
    try:
        done = close()
        if inspect.isawaitable(done):
            await done
    except Exception:
        logger.exception("Failed to close environment %r", environment)


async def enter_lifespan(answer: Any, stack: contextlib.AsyncExitStack, plugin: str) -> None:
    """Enter one ``provide_lifespan`` answer on ``stack``: a generator (what a hook written as one returns, sync or
    async, yielding once) or a context manager; ``None`` owns nothing. Anything else is refused in one line."""
    if answer is None:
        return
    if inspect.isasyncgen(answer):
        answer = contextlib.asynccontextmanager(lambda: answer)()
    elif inspect.isgenerator(answer):
        answer = contextlib.contextmanager(lambda: answer)()
    if hasattr(answer, "__aenter__") and hasattr(answer, "__aexit__"):
        await stack.enter_async_context(answer)
    elif hasattr(answer, "__enter__") and hasattr(answer, "__exit__"):
        stack.enter_context(answer)
    else:
        raise PipelineError(
            f"provide_lifespan of plugin {plugin!r} answered {type(answer).__name__}; it yields once, or returns a "
            "context manager"
        )
