"""The event loop every MCP connection of the process runs on, and what ends them with the process.

The SDK's client is a stack of async context managers that one task must enter and leave, so each connection is
a task on this loop (one daemon thread), and calls from a turn cross over to it. At exit every connection still
open is stopped, so a kernel that shuts down or restarts leaves no server process behind.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import logging
import threading
from collections.abc import Coroutine
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class Stoppable(Protocol):
    def stop(self) -> None: ...


S = TypeVar("S", bound=Stoppable)


class _Loop:
    """The background event loop every MCP connection of this process runs on."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None

    def get(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="bub-nb-mcp", daemon=True)
                thread.start()
                self._loop = loop
            return self._loop

    def submit(self, coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coroutine, self.get())


LOOP = _Loop()


def connection_lost(exc: BaseException) -> bool:
    from mcp.shared.exceptions import MCPError
    from mcp_types import CONNECTION_CLOSED

    return isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED


def quiet_sdk_logs() -> None:
    """The SDK logs a server's garbage and disconnects with tracebacks; a failure is said once, in one line,
    by bub_nb instead, so the SDK's records are not printed into a cell (``logging.getLogger("mcp")`` has them)."""
    logger = logging.getLogger("mcp")
    if logger.propagate:
        logger.addHandler(logging.NullHandler())
        logger.propagate = False


def _stop_all_at_exit(connections: list[Stoppable]) -> None:
    for connection in connections:
        with contextlib.suppress(Exception):
            connection.stop()


_LIVE: list[Stoppable] = []
atexit.register(_stop_all_at_exit, _LIVE)


def track(connection: S) -> S:
    """Stop ``connection`` when the process exits (a kernel shut down or restarted leaves no server behind)."""
    if connection not in _LIVE:
        _LIVE.append(connection)
    return connection


def untrack(connection: Stoppable) -> None:
    with contextlib.suppress(ValueError):
        _LIVE.remove(connection)
