"""Calling a value's own code (``__repr__``, ``len``, properties) with a time limit, and cutting long text."""

from __future__ import annotations

import concurrent.futures
import contextlib
import contextvars
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Limits:
    """How long one call into a value's code may take, and how long one repr may be."""

    seconds: float = 2.0
    chars: int = 2000


@dataclass(frozen=True, slots=True)
class Outcome(Generic[T]):
    """What a bounded call gave: its value, or why there is none (``error`` is one line)."""

    value: T | None = None
    error: str | None = None
    exception: BaseException | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def call_within(function: Callable[[], T], seconds: float) -> Outcome[T]:
    """Run ``function`` on a daemon thread and wait at most ``seconds``.

    An exception becomes the outcome's ``error``; so does running too long, and then the thread is
    abandoned. A daemon thread, so a ``__repr__`` that never returns cannot keep Python from exiting.
    """
    future: concurrent.futures.Future[T] = concurrent.futures.Future()
    context = contextvars.copy_context()

    def work() -> None:
        try:
            result = context.run(function)
        except BaseException as exc:  # a value's code may raise anything; it belongs in the description
            with contextlib.suppress(concurrent.futures.InvalidStateError):
                future.set_exception(exc)
        else:
            with contextlib.suppress(concurrent.futures.InvalidStateError):
                future.set_result(result)

    threading.Thread(target=work, name="bub_nb-inspect", daemon=True).start()
    try:
        return Outcome(future.result(timeout=seconds))
    except concurrent.futures.TimeoutError:
        return Outcome(error=f"did not finish within {seconds:g} s")
    except BaseException as exc:
        return Outcome(error=one_line(exc), exception=exc)


def one_line(exc: BaseException) -> str:
    """``TypeError: message``, on one line."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def shorten(text: str, chars: int) -> str:
    """``text`` cut to about ``chars`` characters, saying how long it was."""
    if len(text) <= chars:
        return text
    return f"{text[:chars]}… ({len(text):,} characters in all)"


def safe_repr(value: Any, limits: Limits) -> str:
    """``repr(value)`` within the time limit and cut to the size limit; a failure is described, not raised."""
    outcome = call_within(lambda: repr(value), limits.seconds)
    if outcome.ok and isinstance(outcome.value, str):
        return shorten(outcome.value, limits.chars)
    problem = outcome.error if not outcome.ok else f"returned {type(outcome.value).__name__}, not str"
    return f"<{type_name(value)} whose repr failed: {problem}>"


def type_name(value: Any) -> str:
    """``pandas.core.frame.DataFrame`` as ``pandas.DataFrame``; builtins by their bare name."""
    kind = type(value)
    module = kind.__module__ or ""
    if module == "builtins":
        return kind.__qualname__
    return f"{module.split('.')[0]}.{kind.__qualname__}"
