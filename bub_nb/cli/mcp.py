"""``bub-nb mcp serve``: the tapes of a home or a database served over MCP, read-only unless told."""

from __future__ import annotations

import argparse
from typing import Any


def add_mcp(commands: Any) -> None:
    """Add ``mcp serve`` to ``bub-nb``'s commands."""
    mcp = commands.add_parser("mcp", help="serve tapes over the Model Context Protocol (the [mcp] extra)")
    actions = mcp.add_subparsers(dest="mcp_command", required=True)
    serve = actions.add_parser(
        "serve",
        help="serve the tapes read-only over stdio (or streamable HTTP with --http)",
        description="Serve tapes to MCP clients (Claude Code, Codex, IDEs): list tapes, anchors, views in any "
        "mode, search, entries, what a turn saw and what a handoff kept; tape:// addresses as resources.",
    )
    where = serve.add_mutually_exclusive_group()
    where.add_argument("--home", help="Bub home (default: $BUB_HOME, else ~/.bub)")
    where.add_argument("--store", metavar="DSN", help="a postgresql:// DSN: what its role may read is what is served")
    serve.add_argument("--http", metavar="HOST:PORT", help="serve streamable HTTP at http://HOST:PORT/mcp, not stdio")
    serve.add_argument("--allow-write", action="store_true", help="also offer handoff and append (the magics' checks)")
    serve.add_argument(
        "--token-file",
        metavar="PATH",
        help="with --http: the secret clients send as 'Authorization: Bearer <token>' (default: $BUB_NB_MCP_TOKEN, "
        "else one is made and printed once to stderr)",
    )
    serve.add_argument(
        "--allow-remote", action="store_true", help="with --http: allow binding an address other than loopback"
    )
    serve.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="with --http: another Host name clients reach the server by (repeatable)",
    )
    serve.set_defaults(handler=_serve)


def _serve(args: argparse.Namespace) -> int:
    from bub_nb.agent.mcp.serve import serve
    from bub_nb.errors import BubNbError

    try:
        import mcp  # noqa: F401
    except ImportError:
        raise BubNbError("bub-nb mcp serve needs the mcp extra: pip install -e '.[mcp]'") from None
    serve(
        home=args.home,
        store=args.store,
        http=args.http,
        allow_write=args.allow_write,
        token_file=args.token_file,
        allow_remote=args.allow_remote,
        allowed_hosts=tuple(args.allow_host),
    )
    return 0
