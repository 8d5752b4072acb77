"""``bub-nb acp serve``: bub_nb as an agent that ACP clients (jupyter-ai, Zed, marimo, editors) drive over stdio."""

from __future__ import annotations

import argparse
from typing import Any


def add_acp(commands: Any) -> None:
    """Add ``acp serve`` to ``bub-nb``'s commands."""
    acp = commands.add_parser("acp", help="be an agent for Agent Client Protocol clients (the [acp] extra)")
    actions = acp.add_subparsers(dest="acp_command", required=True)
    serve = actions.add_parser(
        "serve",
        help="run bub_nb's agent over stdio for an ACP client: each session a tape, each prompt a turn",
        description="Serve the Agent Client Protocol on stdin/stdout: session/new opens a tape named from the "
        "client's folder, session/load replays one, session/list lists them; prompts are bub_nb turns with their "
        "tools, memory and comma commands, python.run asks the client's permission.",
    )
    where = serve.add_mutually_exclusive_group()
    where.add_argument("--home", help="Bub home for the tapes (default: $BUB_HOME, else ~/.bub)")
    where.add_argument("--store", metavar="DSN", help="a postgresql:// DSN: the sessions are its role's tapes")
    serve.add_argument("--model", metavar="SPEC", help="offline, openai:<model> or a model name (default: $BUB_MODEL)")
    serve.set_defaults(handler=_serve)


def _serve(args: argparse.Namespace) -> int:
    from bub_nb.errors import BubNbError

    try:
        import acp  # noqa: F401
    except ImportError:
        raise BubNbError("bub-nb acp serve needs the acp extra: pip install 'bub_nb[acp]'") from None
    from bub_nb.agent.acp import serve

    serve(home=args.home, store=args.store, model=args.model)
    return 0
