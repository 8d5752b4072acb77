"""One live connection to an MCP server, held by the official SDK on an event loop of its own.

The SDK's client is a stack of async context managers (transport, session) that must be entered and left by one
task. A notebook's cells come and go, so each connection lives in a task on a background loop (one thread for
every server of the process) and the agent's calls cross over to it: a call waits for its answer on the caller's
loop, and cancelling it there (an interrupt) cancels it on the server's side too.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from bub_nb.agent.mcp.background import LOOP, connection_lost, quiet_sdk_logs
from bub_nb.agent.mcp.config import ServerSpec
from bub_nb.errors import McpError

START_SECONDS = 30.0
CALL_SECONDS = 120.0
STOP_SECONDS = 5.0


@dataclass(frozen=True)
class ServerTool:
    """A tool as the server lists it."""

    name: str
    description: str
    input_schema: dict[str, Any]


class Connection:
    """A started server: :meth:`start` connects and lists its tools, :meth:`call` calls one, :meth:`stop` ends it.

    ``state`` is ``"stopped"``, ``"running"`` or ``"failed"``; ``problem`` says in one line why it failed.
    """

    def __init__(
        self, spec: ServerSpec, *, start_seconds: float = START_SECONDS, call_seconds: float = CALL_SECONDS
    ) -> None:
        self.spec = spec
        self.start_seconds = start_seconds
        self.call_seconds = call_seconds
        self.state = "stopped"
        self.problem: str | None = None
        self.tools: list[ServerTool] = []
        self.never_started = False  # a start failed: not retried on every turn, only when asked (%mcp restart)
        self.skipped: list[str] = []  # tools left out, one line each (a schema that cannot check arguments)
        self.protocol_version: str | None = None
        self.server_info: str | None = None
        self._client: Any = None
        self._stopping: asyncio.Event | None = None
        self._held: concurrent.futures.Future[None] | None = None
        self._errors: Any = None  # the stdio server's stderr
        self._ready: concurrent.futures.Future[None] | None = None
        self._began = 0.0

    # -- starting and stopping ------------------------------------------------------------------

    def start(self) -> None:
        """Start the server (a process for stdio) and list its tools; a failure is :class:`McpError`, one line."""
        self.begin()
        self.wait_started()

    def begin(self) -> None:
        """Start the server without waiting for it (several servers start side by side); then :meth:`wait_started`."""
        if self.alive or self._ready is not None:
            return
        quiet_sdk_logs()
        self._ready = concurrent.futures.Future()
        self._began = time.monotonic()
        self._held = LOOP.submit(self._hold(self._ready))

    def wait_started(self) -> None:
        """Wait until the server begun by :meth:`begin` has listed its tools; a failure is :class:`McpError`."""
        ready, self._ready = self._ready, None
        if ready is None:
            return
        try:
            ready.result(timeout=max(0.0, self.start_seconds - (time.monotonic() - self._began)))
        except concurrent.futures.TimeoutError:
            self._failed(f"did not answer within {self.start_seconds:g} s of starting")
        except McpError as exc:
            self._failed(str(exc).split(": ", 1)[-1])
        except BaseException:
            self.stop()
            raise

    def stderr_tail(self, lines: int = 3) -> str:
        """The last lines the stdio server wrote to its stderr (empty for HTTP, or when it wrote none)."""
        if self._errors is None:
            return ""
        with contextlib.suppress(OSError, ValueError):
            self._errors.seek(0)
            text = self._errors.read()[-4000:]
            return " | ".join(line.strip() for line in text.strip().splitlines()[-lines:] if line.strip())
        return ""

    def _failed(self, why: str) -> None:
        if tail := self.stderr_tail():
            why = f"{why} (its stderr: {tail[:300]})"
        self.stop(graceful=False)
        self.state, self.problem, self.never_started = "failed", why, True
        raise McpError(f"MCP server {self.spec.name!r} {why}")

    async def _hold(self, ready: concurrent.futures.Future[None]) -> None:
        from mcp import Client

        self._stopping = asyncio.Event()
        try:
            async with Client(self._target(), client_info=_client_info()) as client:
                self._client = client
                self.protocol_version = client.protocol_version
                info = client.server_info
                self.server_info = f"{info.name} {info.version}".strip() if info is not None else None
                self.tools = await _listed_tools(client)
                self.state, self.problem = "running", None
                ready.set_result(None)
                await self._stopping.wait()
        except BaseException as exc:  # the server's task must never die silently: say why, once
            why = _why(exc)
            if not ready.done():
                why = why if why.startswith("could not") else f"could not start: {why}"
                ready.set_exception(McpError(f"MCP server {self.spec.name!r}: {why}"))
            elif self.state == "running":
                self.state, self.problem = "failed", f"stopped unexpectedly: {why}"
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
        finally:
            self._client = None
            if self.state == "running":
                self.state = "stopped"

    def _target(self) -> Any:
        from mcp.client.stdio import StdioServerParameters

        spec = self.spec
        if spec.url is None:
            from mcp.client.stdio import stdio_client

            parameters = StdioServerParameters(
                command=str(spec.command), args=list(spec.args), env=dict(spec.env) or None, cwd=spec.cwd
            )
            # The server's own log is kept aside, not printed into the cell; its last lines explain a failure.
            self._errors = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115 (closed by stop)
            return stdio_client(parameters, errlog=self._errors)
        if not spec.headers:
            return spec.url
        import httpx2
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        client: httpx2.AsyncClient = create_mcp_http_client(headers=dict(spec.headers))
        return streamable_http_client(spec.url, http_client=client)

    def stop(self, *, graceful: bool = True) -> None:
        """End the connection: the SDK closes the transport and ends a stdio server's process (and its children).

        ``graceful=False`` cancels at once: a server that never started has nothing to finish.
        """
        held, stopping = self._held, self._stopping
        self._ready = None
        if held is None:
            return
        if graceful and stopping is not None and not held.done():
            LOOP.get().call_soon_threadsafe(stopping.set)
            with contextlib.suppress(Exception):
                held.result(timeout=STOP_SECONDS)
        if not held.done():
            held.cancel()
        self._held = None
        if self._errors is not None:
            self._errors.close()
            self._errors = None
        if self.state == "running":
            self.state = "stopped"

    @property
    def starting(self) -> bool:
        return self._ready is not None

    @property
    def alive(self) -> bool:
        return self.state == "running" and self._held is not None and not self._held.done()

    # -- calling --------------------------------------------------------------------------------

    async def call(self, tool: str, arguments: dict[str, Any], *, seconds: float | None = None) -> Any:
        """Call ``tool`` and return the SDK's ``CallToolResult``; waits on the caller's loop.

        A server that died, hangs past ``seconds`` or answers garbage is :class:`McpError`; cancelling the
        caller cancels the call on the server's loop (the SDK tells the server).
        """
        if not self.alive:
            why = self.problem or "is not running"
            raise McpError(f"MCP server {self.spec.name!r} {why}")
        future = LOOP.submit(self._call(tool, arguments, self.call_seconds if seconds is None else seconds))
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            future.cancel()
            raise

    async def _call(self, tool: str, arguments: dict[str, Any], seconds: float) -> Any:
        client = self._client
        if client is None:
            raise McpError(f"MCP server {self.spec.name!r} {self.problem or 'is not running'}")
        started = time.monotonic()
        try:
            async with asyncio.timeout(seconds):
                return await client.call_tool(tool, arguments)
        except TimeoutError:
            raise McpError(f"MCP server {self.spec.name!r} did not answer {tool!r} within {seconds:g} s") from None
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if connection_lost(exc) or not self.alive:  # said once; the next use starts the server again
                tail = self.stderr_tail()
                self.state, self.problem = (
                    "failed",
                    f"stopped during {tool!r}" + (f" (its stderr: {tail})" * bool(tail)),
                )
                if self._stopping is not None:
                    self._stopping.set()
                raise McpError(f"MCP server {self.spec.name!r} {self.problem}") from None
            elapsed = time.monotonic() - started
            raise McpError(
                f"MCP server {self.spec.name!r} failed {tool!r} after {elapsed:.1f} s: {_why(exc)}"
            ) from None


async def _listed_tools(client: Any) -> list[ServerTool]:
    listed: list[ServerTool] = []
    cursor: str | None = None
    for _page in range(100):  # a paginator that never ends cannot hang a start
        result = await (client.list_tools(cursor=cursor) if cursor else client.list_tools())
        for item in result.tools:
            schema = item.input_schema if hasattr(item, "input_schema") else item.inputSchema
            listed.append(ServerTool(str(item.name), str(item.description or ""), dict(schema or {})))
        cursor = getattr(result, "next_cursor", None) or getattr(result, "nextCursor", None)
        if not cursor:
            break
    return listed


def _client_info() -> Any:
    from importlib.metadata import version

    from mcp_types import Implementation

    return Implementation(name="bub_nb", version=version("bub_nb"))


def _why(exc: BaseException) -> str:
    """One line for what went wrong, digging through the task groups the SDK wraps errors in."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, FileNotFoundError):
        return f"could not be started: {exc.filename or exc} was not found"
    if isinstance(exc, asyncio.CancelledError):
        return "was stopped"
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


__all__ = ["CALL_SECONDS", "START_SECONDS", "Connection", "ServerTool"]
