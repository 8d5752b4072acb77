"""The notebook's MCP servers: those ``%mcp add`` started, ``BubMagics.mcp_servers`` and the ``.mcp.json`` beside
the notebook, kept up to date on every use, their problems said once as warnings."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from bub_nb.agent.mcp import Approvals, McpServers, read_mcp_json, servers_from
from bub_nb.agent.mcp.approvals import APPROVALS_FILE
from bub_nb.agent.mcp.servers import Ask
from bub_nb.agent.mcp.tools import could_name
from bub_nb.tape import current_notebook
from bub_nb.tape.locations import bub_home

if TYPE_CHECKING:
    from bub_nb.agent.tools import Tool


class NotebookMcp:
    """The :class:`McpServers` of one notebook session."""

    def __init__(self, settings: Any, ask: Ask | None = None) -> None:
        self._settings = settings
        self.servers = McpServers(ask=ask)
        self._said: set[str] = set()

    def current(self) -> McpServers:
        """The servers, brought up to date with ``BubMagics.mcp_servers`` and the ``.mcp.json`` beside the notebook
        (a changed entry restarts that server; a removed one stops)."""
        servers, settings = self.servers, self._settings
        approvals = bub_home(settings.home or None) / APPROVALS_FILE
        if servers.approvals.path != approvals:
            servers.approvals = Approvals(approvals)
        servers.allow_mcp_json = bool(getattr(settings, "allow_mcp_json", False))
        configured = dict(getattr(settings, "mcp_servers", None) or {})
        servers.sync(servers_from(configured, source="config"), source="config")
        servers.sync(read_mcp_json(current_notebook().workspace), source="mcp.json")
        return servers

    def tools(self, spec: str | Iterable[str] | None = None) -> list[Tool]:
        """The tools of the servers a ``--tools`` selection could name (all without one), starting them on first
        use; a server that cannot start or is not approved is one warning line, said once (``%mcp`` lists it until
        it is fixed), and its tools are left out. A server the selection leaves out is neither started nor asked
        about."""
        servers = self.current()
        named = servers.names if spec is None else [name for name in servers.names if _may_name(name, spec)]
        if not named:
            return []
        tools, problems = servers.tools(only=named)
        for problem in problems:
            if problem not in self._said:
                print(f"Warning: {problem}", file=sys.stderr)
        self._said = set(problems)
        return tools

    def close(self) -> None:
        """Stop every server (with the extension); the configuration stays."""
        self.servers.close()


def _may_name(server: str, spec: str | Iterable[str]) -> bool:
    """Whether a ``--tools`` selection could name one of ``server``'s tools, so only those servers are started."""
    names = [n.strip() for n in (spec.split(",") if isinstance(spec, str) else spec)]
    return any(could_name(server, name) for name in names if name)
