"""Running the agent's coroutines from synchronous code, inside a Jupyter kernel's event loop or not."""

from __future__ import annotations

import asyncio
import atexit
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")
_threads = threading.local()


def _runner() -> asyncio.Runner:
    """This thread's event loop for synchronous calls, kept so a model's connections are reused."""
    runner: asyncio.Runner | None = getattr(_threads, "runner", None)
    if runner is None:
        runner = _threads.runner = asyncio.Runner(loop_factory=asyncio.new_event_loop)
        atexit.register(runner.close)
    return runner


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` to its end and return its result.

    Outside an event loop it runs on this thread's own loop, and Ctrl-C cancels it (``asyncio.Runner``
    does that), so a turn records the interrupt. Inside a running loop (a Jupyter kernel) the loop is
    made re-entrant, only then, with nest-asyncio2: the maintained fork of nest-asyncio that ipykernel
    itself depends on. The original breaks ipykernel 7, whose queued cells share one context: the
    next cell's first step would be lost and the cell would never run.
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return _runner().run(coroutine)
    import nest_asyncio2

    nest_asyncio2.apply(loop)
    task = loop.create_task(coroutine)
    try:
        return loop.run_until_complete(task)
    finally:
        if not task.done():  # a Ctrl-C between the task's steps must not leave it running in the background
            task.cancel()
