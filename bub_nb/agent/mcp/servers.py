"""The MCP servers an agent or a notebook uses: which are configured, which may start, and their tools.

A server starts on first use (the first turn that offers tools, or ``%mcp add``) and stops with
:meth:`McpServers.close`, its removal, or the process. A server read from a ``.mcp.json`` is approved once before
it ever starts; the answer is kept per file, server and configuration, so a changed command is asked about again.
A server that cannot start or dies gives one line, and the turn goes on with the other tools.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bub_nb.agent.mcp.approvals import Approvals
from bub_nb.agent.mcp.background import track, untrack
from bub_nb.agent.mcp.config import MCP_JSON, ServerSpec, Source, check_name, read_mcp_json, servers_from
from bub_nb.agent.mcp.connection import CALL_SECONDS, START_SECONDS, Connection
from bub_nb.agent.mcp.tools import server_tools
from bub_nb.agent.tools import Tool
from bub_nb.errors import McpError

#: Asks a person whether a server from a ``.mcp.json`` may start: ``True``/``False``, or ``None`` when no one
#: can be asked (a headless run).
Ask = Callable[[ServerSpec], bool | None]


@dataclass(frozen=True)
class ServerStatus:
    """One row of ``%mcp``: a server, where it came from, its state and its tools."""

    name: str
    transport: str
    target: str
    source: str
    state: str
    tools: tuple[str, ...]
    problem: str | None
    skipped: tuple[str, ...]


class McpServers:
    """Named MCP servers and their live connections; :meth:`tools` starts what may start and lists its tools."""

    def __init__(
        self,
        servers: Iterable[ServerSpec] = (),
        *,
        approvals: Approvals | None = None,
        ask: Ask | None = None,
        allow_mcp_json: bool = False,
        start_seconds: float = START_SECONDS,
        call_seconds: float = CALL_SECONDS,
    ) -> None:
        self.approvals = approvals or Approvals(None)
        self.ask = ask
        self.allow_mcp_json = allow_mcp_json
        self.start_seconds = start_seconds
        self.call_seconds = call_seconds
        self._specs: dict[str, ServerSpec] = {}
        self._connections: dict[str, Connection] = {}
        self._refused: dict[str, str] = {}
        for spec in servers:
            self.put(spec)

    @classmethod
    def of(cls, value: Any) -> McpServers:
        """Servers from what a user hands ``Agent(mcp=...)``: an :class:`McpServers`, an ``mcpServers`` mapping
        (or a whole ``.mcp.json`` object), or the path of a ``.mcp.json`` or of its folder."""
        if isinstance(value, McpServers):
            return value
        if isinstance(value, str | os.PathLike):
            path = Path(value).expanduser()
            path = path / MCP_JSON if path.is_dir() else path
            if not path.is_file():
                raise McpError(f"No MCP configuration at {path}")
            specs = read_mcp_json(path.parent) if path.name == MCP_JSON else _read(path)
            return cls(replace(spec, source="python") for spec in specs)
        return cls(servers_from(value, source="python"))

    # -- configuring ----------------------------------------------------------------------------

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def __len__(self) -> int:
        return len(self._specs)

    @property
    def names(self) -> list[str]:
        return list(self._specs)

    def spec(self, name: str) -> ServerSpec:
        found = self._specs.get(name)
        if found is None:
            raise McpError(f"No MCP server named {name!r}; known: {', '.join(self._specs) or '(none)'}")
        return found

    def put(self, spec: ServerSpec) -> bool:
        """Keep ``spec`` (replacing a server of that name whose configuration changed); ``True`` when it is new or
        changed, so a running server with the old configuration is stopped."""
        old = self._specs.get(spec.name)
        if old == spec:
            return False
        if old is not None:
            self._stop(spec.name)
        self._specs[spec.name] = spec
        self._refused.pop(spec.name, None)
        return True

    def add(self, spec: ServerSpec) -> list[Tool]:
        """Add a server the user typed and start it now, so a bad command is said at once; its tools."""
        if spec.name in self._specs and self._specs[spec.name].source != spec.source:
            raise McpError(f"An MCP server named {spec.name!r} is already configured ({self._specs[spec.name].source})")
        self.put(spec)
        try:
            return self._started_tools(spec.name, [])
        except McpError:
            self.remove(spec.name)
            raise

    def remove(self, name: str) -> None:
        """Stop the server (its process ends) and forget it."""
        check_name(name)
        self.spec(name)
        self._stop(name)
        del self._specs[name]
        self._refused.pop(name, None)

    def sync(self, specs: Iterable[ServerSpec], *, source: Source) -> None:
        """Make the servers from ``source`` exactly ``specs`` (a re-read ``.mcp.json`` or changed setting)."""
        wanted = {spec.name: spec for spec in specs}
        for name, spec in list(self._specs.items()):
            if spec.source == source and name not in wanted:
                self._stop(name)
                del self._specs[name]
        for spec in wanted.values():
            current = self._specs.get(spec.name)
            if current is None or current.source == source:
                self.put(spec)

    def approve(self, name: str, approved: bool = True) -> None:
        """Answer for a ``.mcp.json`` server (``%mcp approve NAME`` / ``%mcp deny NAME``); kept for next time."""
        spec = self.spec(name)
        if not spec.needs_approval:
            raise McpError(
                f"MCP server {name!r} was added by you ({spec.source}); only .mcp.json servers need approval"
            )
        self.approvals.record(spec, approved)
        self._refused.pop(name, None)
        if not approved:
            self._stop(name)

    # -- using ----------------------------------------------------------------------------------

    def tools(self, taken: Iterable[str] = (), only: Iterable[str] | None = None) -> tuple[list[Tool], list[str]]:
        """Every tool of every server that may run (of the servers named ``only``, when given), starting those not
        running; and one line per server left out.

        Nothing here raises for one server: a refusal, a failed start or a crash is a line, and the rest go on.
        """
        made: list[Tool] = []
        problems: list[str] = []
        names = list(taken)
        allowed = []
        wanted = None if only is None else set(only)
        for name, spec in self._specs.items():
            if wanted is not None and name not in wanted:
                continue
            if (why := self._may_not_start(spec)) is not None:
                problems.append(why)
                continue
            try:
                self._connection(name).begin()  # every server starts at once; each is waited for below
            except McpError as exc:
                problems.append(f"{exc}; its tools are left out")
            else:
                allowed.append(name)
        for name in allowed:
            try:
                tools = self._started_tools(name, names)
            except McpError as exc:
                problems.append(f"{exc}; its tools are left out")
                continue
            names += [item.name for item in tools]
            made += tools
        return made, problems

    def _may_not_start(self, spec: ServerSpec) -> str | None:
        if not spec.needs_approval or self.allow_mcp_json:
            return None
        answer = self.approvals.answer(spec)
        if answer is None and spec.name not in self._refused:
            answer = self.ask(spec) if self.ask is not None else None
            if answer is not None:
                self.approvals.record(spec, answer)
        if answer:
            return None
        why = (
            f"MCP server {spec.name!r} from {spec.origin} was denied; %mcp approve {spec.name} allows it"
            if answer is False
            else f"MCP server {spec.name!r} from {spec.origin} is not approved and no one here can approve it; "
            f"%mcp approve {spec.name} (or %config BubMagics.allow_mcp_json = True) allows it"
        )
        self._refused[spec.name] = why
        return why

    def _connection(self, name: str) -> Connection:
        """The server's connection, a new one when it is not running (a server that died restarts on next use)."""
        connection = self._connections.get(name)
        if connection is not None and connection.never_started:
            raise McpError(f"MCP server {name!r} {connection.problem}; %mcp restart {name} tries again")
        if connection is None or not (connection.alive or connection.starting):
            if connection is not None:
                connection.stop()
                untrack(connection)
            connection = self._connections[name] = track(
                Connection(self._specs[name], start_seconds=self.start_seconds, call_seconds=self.call_seconds)
            )
        return connection

    def _started_tools(self, name: str, taken: list[str]) -> list[Tool]:
        connection = self._connection(name)
        connection.start()
        tools, connection_skipped = server_tools(connection, taken)
        connection.skipped = connection_skipped
        return tools

    def status(self) -> list[ServerStatus]:
        rows = []
        for name, spec in self._specs.items():
            connection = self._connections.get(name)
            state = connection.state if connection is not None else "not started"
            problem = connection.problem if connection is not None else None
            if name in self._refused and (connection is None or not connection.alive):
                state, problem = "not approved", self._refused[name]
            tools: tuple[str, ...] = ()
            skipped: tuple[str, ...] = ()
            if connection is not None and connection.alive:
                made, left = server_tools(connection)
                tools, skipped = tuple(item.name for item in made), tuple(left)
            rows.append(
                ServerStatus(name, spec.transport, spec.describe(), spec.source, state, tools, problem, skipped)
            )
        return rows

    def restart(self, name: str) -> list[Tool]:
        """Stop the server if it runs and start it again, also after a failed start; its tools."""
        self.spec(name)
        self._stop(name)
        self._refused.pop(name, None)
        return self._started_tools(name, [])

    def _stop(self, name: str) -> None:
        connection = self._connections.pop(name, None)
        if connection is not None:
            connection.stop()
            untrack(connection)

    def close(self) -> None:
        """Stop every server; a stdio server's process ends. The configuration stays, so a later use restarts."""
        for name in list(self._connections):
            self._stop(name)

    def __enter__(self) -> McpServers:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _read(path: Path) -> list[ServerSpec]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise McpError(f"{path} could not be read as JSON: {exc}") from None
    return servers_from(data, source="python", origin=str(path.resolve()))


def mcp_servers_of(value: Mapping[str, Any] | McpServers | str | os.PathLike[str] | None) -> McpServers | None:
    """``Agent(mcp=...)``'s value as :class:`McpServers` (``None`` stays ``None``)."""
    return None if value is None else McpServers.of(value)


def offer_mcp_tools(servers: McpServers | None, registry: Any) -> list[str]:
    """Register every tool ``servers`` can offer now into ``registry`` (starting servers on first use); one line
    per server left out, for the turn's notices. Tools already registered under a name stay as they are."""
    if not servers:
        return []
    tools, problems = servers.tools(taken=registry.names)
    for item in tools:
        if item.name not in registry:
            registry.register(item)
    return problems
