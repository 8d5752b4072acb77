"""Tools from MCP servers for the agent (stdio and streamable HTTP, through the official ``mcp`` SDK).

``McpServers`` holds the configured servers and starts them on first use; their tools are ``mcp.<server>.<tool>``
like any other tool, on the tape with ``meta.mcp`` naming the server, the tool and the protocol version.
The SDK is the ``[mcp]`` extra: nothing here imports it until a server starts.
"""

from __future__ import annotations

from bub_nb.agent.mcp.config import MCP_JSON, ServerSpec, read_mcp_json, server_spec, servers_from
from bub_nb.agent.mcp.servers import Approvals, McpServers, ServerStatus, mcp_servers_of

__all__ = [
    "MCP_JSON",
    "Approvals",
    "McpServers",
    "ServerSpec",
    "ServerStatus",
    "mcp_servers_of",
    "read_mcp_json",
    "server_spec",
    "servers_from",
]
