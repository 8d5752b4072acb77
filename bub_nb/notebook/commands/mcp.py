"""``%mcp``: add, list, approve and remove the MCP servers whose tools the notebook's agents are offered; each
subcommand is registered in :data:`MCP`, which parses it and writes ``%mcp?``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from bub_nb.agent.mcp import server_spec
from bub_nb.notebook.commands.registry import Subcommands, arg
from bub_nb.notebook.display import show
from bub_nb.notebook.parsing.magic_line import split_words

if TYPE_CHECKING:
    import pandas as pd

    from bub_nb.notebook.session import NotebookSession

MCP = Subcommands(
    "mcp",
    "The MCP servers whose tools the notebook's agents are offered as mcp.<server>.<tool>; alone, %mcp lists them.",
    default="list",
)


class McpCommands:
    """Runs ``%mcp`` lines on the session's servers; bad input is a one-line ``UsageError``."""

    def __init__(self, session: NotebookSession) -> None:
        self.session = session

    def run(self, line: str) -> pd.DataFrame | None:
        words = split_words(line)
        # What follows "--" is the server's command line, whose options are its own, not %mcp's.
        command: list[str] = []
        if "--" in words:
            at = words.index("--")
            words, command = words[:at], words[at + 1 :]
        chosen, rest = MCP.choose(words)
        if command and chosen.name != "add":
            raise UsageError(f"-- COMMAND goes with %mcp add; usage: {chosen.usage}")
        args = MCP.parse(chosen, rest)
        args.command = command
        return chosen.handler(self, args)

    def table(self) -> pd.DataFrame | None:
        import pandas as pd

        rows = self.session.mcp.current().status()
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


@MCP.add("list", "The servers: where each comes from, its state, its tools and any problem.")
def _list(commands: McpCommands, args: argparse.Namespace) -> pd.DataFrame | None:
    return commands.table()


@MCP.add(
    "add",
    "Start a server now (a bad command says so at once) and offer its tools from the next turn: a program "
    "speaking MCP over stdio after --, or a streamable HTTP server at --url.",
    arg("name", metavar="NAME", help="the server's name, as its tools are called: mcp.NAME.<tool>"),
    arg("--url", default=None, help="a streamable HTTP server's address"),
    arg("--header", action="append", default=[], metavar="K=V", help="with --url: a header sent with each request"),
    arg("--env", action="append", default=[], metavar="K=V", help="with a command: its environment variable"),
    usage="%(prog)s NAME [--env K=V ...] -- COMMAND [ARGS ...] | %%%(prog)s NAME --url URL [--header K=V ...]",
)
def _add(commands: McpCommands, args: argparse.Namespace) -> None:
    name, command = args.name, args.command
    if (args.url is not None) == bool(command):
        raise UsageError(f"%mcp add {name} needs either -- COMMAND [ARGS...] or --url URL")
    config: dict[str, Any] = {}
    env, headers = _pairs("--env", args.env), _pairs("--header", args.header)
    if command:
        if headers:
            raise UsageError(f"%mcp add {name}: --header goes with --url, not with a command (-- COMMAND)")
        config.update(command=command[0], args=command[1:], **({"env": env} if env else {}))
    else:
        if env:
            raise UsageError(f"%mcp add {name}: --env goes with a command (-- COMMAND), not with --url")
        config.update(url=args.url, **({"headers": headers} if headers else {}))
    spec = server_spec(name, config, source="added")
    tools = commands.session.mcp.current().add(spec)
    show(f"MCP server `{name}` started ({spec.transport}): {_tools_said(tools)}.")


def _pairs(option: str, values: list[str]) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for value in values:
        key, sep, text = value.partition("=")
        if not sep or not key:
            raise UsageError(f"{option} takes KEY=VALUE, got {value!r}")
        pairs[key] = text
    return pairs


_NAME = arg("name", metavar="NAME", help="the server's name, as %%mcp lists it")


@MCP.add("remove", "Stop a server added with %mcp add (its process ends) and forget it.", _NAME)
def _remove(commands: McpCommands, args: argparse.Namespace) -> None:
    servers = commands.session.mcp.current()
    if servers.spec(args.name).source != "added":
        where = servers.spec(args.name).origin or "BubMagics.mcp_servers"
        raise UsageError(f"MCP server {args.name!r} comes from {where}; remove it there (or %mcp deny {args.name})")
    servers.remove(args.name)
    show(f"MCP server `{args.name}` stopped and removed.")


@MCP.add("restart", "Start a server again (a server that failed to start is not retried alone).", _NAME)
def _restart(commands: McpCommands, args: argparse.Namespace) -> None:
    tools = commands.session.mcp.current().restart(args.name)
    show(f"MCP server `{args.name}` restarted: {_tools_said(tools)}.")


@MCP.add("approve", "Offer the tools of a server of the .mcp.json beside the notebook, from the next turn.", _NAME)
def _approve(commands: McpCommands, args: argparse.Namespace) -> None:
    commands.session.mcp.current().approve(args.name, True)
    show(
        f"MCP server `{args.name}` approved: its tools are offered from the next turn. "
        "The answer is kept for this configuration of it."
    )


@MCP.add("deny", "Refuse a server of the .mcp.json beside the notebook: its tools are not offered.", _NAME)
def _deny(commands: McpCommands, args: argparse.Namespace) -> None:
    commands.session.mcp.current().approve(args.name, False)
    show(f"MCP server `{args.name}` denied. The answer is kept for this configuration of it.")


def _tools_said(tools: list[Any]) -> str:
    listed = ", ".join(f"`{item.name}`" for item in tools) or "none"
    return f"{len(tools)} tool{'s' * (len(tools) != 1)}: {listed}"
