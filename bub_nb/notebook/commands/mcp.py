"""``%mcp``: add, list, approve and remove the MCP servers whose tools the notebook's agents are offered.

::

    %mcp                                       the servers, where each comes from, its state and its tools
    %mcp add NAME [--env K=V ...] -- COMMAND [ARGS ...]    a stdio server (started now, so a bad command says so)
    %mcp add NAME --url URL [--header K=V ...]             a streamable HTTP server
    %mcp remove NAME                           stop it (its process ends) and forget it
    %mcp restart NAME                          start it again (a server that failed to start is not retried alone)
    %mcp approve NAME | %mcp deny NAME         answer for a server of the .mcp.json beside the notebook
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from bub_nb.agent.mcp import server_spec
from bub_nb.notebook.display import show
from bub_nb.notebook.parsing.magic_line import split_words

if TYPE_CHECKING:
    import pandas as pd

    from bub_nb.notebook.session import NotebookSession

USAGE = (
    "%mcp [add NAME -- COMMAND [ARGS...] | add NAME --url URL [--header K=V] | remove NAME | restart NAME | "
    "approve NAME | deny NAME]"
)


class McpCommands:
    """The actions of ``%mcp`` on the session's servers; bad input is a one-line ``UsageError``."""

    def __init__(self, session: NotebookSession) -> None:
        self._session = session

    def run(self, line: str) -> pd.DataFrame | None:
        words = split_words(line)
        action, rest = (words[0], words[1:]) if words else ("list", [])
        servers = self._session.mcp.current()
        if action == "list" and not rest:
            return self.table()
        if action == "add":
            self._add(rest)
            return None
        if action in ("remove", "approve", "deny", "restart"):
            if len(rest) != 1:
                raise UsageError(f"%mcp {action} takes one server name, e.g. %mcp {action} time")
            (name,) = rest
            if action == "restart":
                tools = servers.restart(name)
                show(f"MCP server `{name}` restarted: {_tools_said(tools)}.")
            elif action == "remove":
                if servers.spec(name).source != "added":
                    where = servers.spec(name).origin or "BubMagics.mcp_servers"
                    raise UsageError(f"MCP server {name!r} comes from {where}; remove it there (or %mcp deny {name})")
                servers.remove(name)
                show(f"MCP server `{name}` stopped and removed.")
            else:
                servers.approve(name, action == "approve")
                word = "approved: its tools are offered from the next turn" if action == "approve" else "denied"
                show(f"MCP server `{name}` {word}. The answer is kept for this configuration of it.")
            return None
        raise UsageError(f"Unknown %mcp action {action!r}; use {USAGE}")

    def _add(self, words: list[str]) -> None:
        if not words or words[0].startswith("-"):
            raise UsageError(f"%mcp add needs a server name first: {USAGE}")
        name, options = words[0], words[1:]
        command: list[str] = []
        if "--" in options:
            at = options.index("--")
            options, command = options[:at], options[at + 1 :]
        config: dict[str, Any] = {}
        env: dict[str, str] = {}
        headers: dict[str, str] = {}
        i = 0
        while i < len(options):
            option = options[i]
            if option not in ("--url", "--header", "--env") or i + 1 >= len(options):
                raise UsageError(f"%mcp add {name}: unexpected {option!r}; use {USAGE}")
            value = options[i + 1]
            if option == "--url":
                config["url"] = value
            else:
                key, sep, text = value.partition("=")
                if not sep or not key:
                    raise UsageError(f"%mcp add {name}: {option} takes KEY=VALUE, got {value!r}")
                (headers if option == "--header" else env)[key] = text
            i += 2
        if ("url" in config) == bool(command):
            raise UsageError(f"%mcp add {name} needs either -- COMMAND [ARGS...] or --url URL: {USAGE}")
        if command:
            config.update(command=command[0], args=command[1:], **({"env": env} if env else {}))
        elif env:
            raise UsageError(f"%mcp add {name}: --env goes with a command (-- COMMAND), not with --url")
        elif headers:
            config["headers"] = headers
        spec = server_spec(name, config, source="added")
        tools = self._session.mcp.current().add(spec)
        show(f"MCP server `{name}` started ({spec.transport}): {_tools_said(tools)}.")

    def table(self) -> pd.DataFrame | None:
        import pandas as pd

        rows = self._session.mcp.current().status()
        if not rows:
            show("No MCP servers. Add one with `%mcp add NAME -- COMMAND [ARGS...]` or `%mcp add NAME --url URL`.")
            return None
        frame = pd.DataFrame(
            [
                {
                    "server": row.name,
                    "transport": row.transport,
                    "command or URL": row.target,
                    "from": row.source,
                    "state": row.state,
                    "tools": ", ".join(row.tools) or "-",
                    "problem": "; ".join(filter(None, [row.problem, *row.skipped])) or "",
                }
                for row in rows
            ]
        )
        return frame.set_index("server")


def _tools_said(tools: list[Any]) -> str:
    listed = ", ".join(f"`{item.name}`" for item in tools) or "none"
    return f"{len(tools)} tool{'s' * (len(tools) != 1)}: {listed}"
