"""Synchronous tools run on a worker thread, so an interrupt never waits for a slow tool to return.

The turn awaits the worker; when the turn is interrupted it stops waiting and the worker is
abandoned. Whatever the worker returns later goes nowhere: the turn has already recorded the call
as interrupted.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


async def in_worker(function: Callable[..., T], /, *args: Any, name: str = "call") -> T:
    """Run ``function(*args)`` on a daemon thread (with this context's variables) and await its result.

    A daemon thread, not a pool: an abandoned call that never returns must not keep Python from exiting.
    """
    future: concurrent.futures.Future[T] = concurrent.futures.Future()
    context = contextvars.copy_context()  # keeps the cell a print belongs to, in Jupyter

    def work() -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            result = context.run(function, *args)
        except BaseException as exc:
            with contextlib.suppress(concurrent.futures.InvalidStateError):
                future.set_exception(exc)
        else:
            with contextlib.suppress(concurrent.futures.InvalidStateError):
                future.set_result(result)

    threading.Thread(target=work, name=f"bub_nb-tool:{name}", daemon=True).start()
    return await asyncio.wrap_future(future)
