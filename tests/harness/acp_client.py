"""The ACP SDK's own client driving ``bub-nb acp serve`` over stdio: what a client receives, kept in order.

``RecordingClient`` is the client side a host implements (session updates, permission requests) and nothing else:
it answers permission requests as told and keeps every update. ``acp_agent(...)`` spawns the server with the SDK's
``spawn_agent_process`` and yields the SDK's ``ClientSideConnection`` to it, initialized.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import acp
from acp import schema

import bub_nb

BUB_NB = str(Path(sys.executable).with_name("bub-nb"))
PACKAGE_ROOT = str(Path(bub_nb.__file__).resolve().parents[1])
"""The folder holding the bub_nb under test: the server imports it, not whatever copy the environment installed."""


@dataclass
class RecordingClient:
    """An ACP client that keeps every session update and answers permission requests with ``permit``."""

    permit: str | None = "allow"
    """The option id chosen for each permission request; ``None`` cancels the request."""
    updates: list[tuple[str, Any]] = field(default_factory=list)
    permissions: list[Any] = field(default_factory=list)

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any) -> Any:
        self.permissions.append(tool_call)
        if self.permit is None:
            return schema.RequestPermissionResponse(outcome=schema.DeniedOutcome(outcome="cancelled"))
        chosen = schema.AllowedOutcome(outcome="selected", option_id=self.permit)
        return schema.RequestPermissionResponse(outcome=chosen)

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))

    def of_kind(self, kind: str, session_id: str | None = None) -> list[Any]:
        return [u for s, u in self.updates if u.session_update == kind and (session_id is None or s == session_id)]

    def text(self, session_id: str | None = None, kind: str = "agent_message_chunk") -> str:
        return "".join(u.content.text for u in self.of_kind(kind, session_id))

    def on_connect(self, conn: Any) -> None:
        return None


def server_environment(home: Path, base_url: str | None = None, **more: str) -> dict[str, str]:
    """The server's environment: the Bub home, the model endpoint when given, the bub_nb under test, nothing from
    the developer's shell."""
    env = {"BUB_HOME": str(home), "PATH": os.environ.get("PATH", ""), "HOME": str(home), "PYTHONPATH": PACKAGE_ROOT}
    if base_url is not None:
        env |= {"BUB_API_BASE": base_url, "BUB_API_KEY": "test"}
    return env | more


@contextlib.asynccontextmanager
async def acp_agent(
    client: RecordingClient,
    home: Path,
    *,
    model: str = "offline",
    base_url: str | None = None,
    log: Path | None = None,
) -> AsyncIterator[tuple[Any, Any]]:
    """``bub-nb acp serve --home HOME --model MODEL`` spawned and initialized: ``(connection, process)``."""
    err = open(log or home / "acp-server.log", "ab")  # noqa: SIM115 - held open while the server runs
    try:
        async with acp.spawn_agent_process(
            client, BUB_NB, "acp", "serve", "--home", str(home), "--model", model,
            env=server_environment(home, base_url), transport_kwargs={"stderr": err.fileno()},
        ) as (conn, process):  # fmt: skip
            await conn.initialize(
                protocol_version=acp.PROTOCOL_VERSION, client_capabilities=schema.ClientCapabilities()
            )
            yield conn, process
    finally:
        err.close()


def text_prompt(text: str) -> list[Any]:
    return [schema.TextContentBlock(type="text", text=text)]


@contextlib.asynccontextmanager
async def in_process(client: RecordingClient, server: Any) -> AsyncIterator[Any]:
    """The SDK's client and agent connections over a socket pair in this process: ``server`` (an
    :class:`~bub_nb.agent.acp.AcpServer`) answers as ``bub-nb acp serve`` would, without a process to start."""
    import socket

    ours, theirs = socket.socketpair()
    agent_reader, agent_writer = await asyncio.open_connection(sock=theirs)
    client_reader, client_writer = await asyncio.open_connection(sock=ours)
    listening = asyncio.ensure_future(acp.run_agent(server, agent_writer, agent_reader))
    conn = acp.connect_to_agent(client, client_writer, client_reader)
    try:
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION, client_capabilities=schema.ClientCapabilities())
        yield conn
    finally:
        await conn.close()
        client_writer.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(listening, 5)
        server.shut()
