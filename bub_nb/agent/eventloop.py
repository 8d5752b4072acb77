"""Running the agent's coroutines from synchronous code (in a kernel's event loop or not), and closing streams."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Coroutine
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


async def once(answer: Awaitable[T]) -> AsyncIterator[T]:
    """A one-item stream of what ``answer`` gives."""
    yield await answer


class Closing(contextlib.AbstractAsyncContextManager[AsyncIterator[T]]):
    """Close a model's stream when the step leaves it early, so its connection is released now.

    A class, not an ``asynccontextmanager``: that would be one more async generator, which an event loop
    shutting down closes on its own and in any order, before the step that holds it ("generator didn't
    stop after athrow()"). Closing a stream that is already closed does nothing.
    """

    def __init__(self, items: AsyncIterator[T]) -> None:
        self._items = items

    async def __aenter__(self) -> AsyncIterator[T]:
        return self._items

    async def __aexit__(self, *exc_info: object) -> None:
        close = getattr(self._items, "aclose", None)
        if close is not None:
            await close()


async def next_item(deltas: AsyncIterator[T]) -> T:
    """The next item of ``deltas``, as a coroutine :func:`run_sync` can run."""
    return await anext(deltas)


async def closed(deltas: AsyncGenerator[Any, None]) -> None:
    """Close ``deltas``, as a coroutine :func:`run_sync` can run."""
    await deltas.aclose()
