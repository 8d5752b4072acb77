"""``bub-nb``: run a notebook of ``%%bub`` cells headless, list tapes, move them to and from a database, export them."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from bub_nb.cli.acp import add_acp
from bub_nb.cli.db import add_db, database
from bub_nb.cli.mcp import add_mcp
from bub_nb.cli.redact import add_redact
from bub_nb.cli.run import add_run
from bub_nb.cli.tapes import add_attach, add_export, add_list, add_merge, add_push_pull
from bub_nb.errors import BubNbError, TapeNotFoundError
from bub_nb.markup import visible_terminal


class Parser(argparse.ArgumentParser):
    """argparse, with a mistake on the command line said in one line rather than the usage and the error."""

    def error(self, message: str) -> NoReturn:
        from bub_nb.tape.stores.dsn import redact_dsn

        self.exit(2, f"{self.prog}: {redact_dsn(message)} (see {self.prog} --help)\n")


def _import(args: argparse.Namespace) -> int:
    from bub_nb.imports import import_log
    from bub_nb.imports.discover import run_discovery

    if args.discover:
        return run_discovery(args.home)
    report = import_log(args.path, args.format, name=args.name, home=args.home)
    print(report.describe())
    print(f"Tape: {report.location}")
    return 0


def parser() -> tuple[Parser, argparse._SubParsersAction[Parser]]:
    """The whole command line, and the subcommands of ``bub-nb tapes``."""
    parser = Parser(
        prog="bub-nb",
        usage="%(prog)s [-h] {run,tapes,mcp,acp,db} ...",
        description="bub_nb: Bub's tape model in Jupyter.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    # The commands are listed once, in the epilog, with their usage: not again as a positional argument.
    commands = parser.add_subparsers(
        prog="bub-nb", dest="command", required=True, metavar="{run,tapes,mcp,acp,db}", help=argparse.SUPPRESS
    )
    add_run(commands)
    tapes = commands.add_parser(
        "tapes",
        help="list, move, export, import, redact, merge and attach tapes",
        description="The tapes of a Bub home: list them, move them to and from a database, export, import, redact.",
    )
    moves = tapes.add_subparsers(
        dest="move", required=True, metavar="{list,push,pull,export,import,redact,merge,attach}"
    )
    add_list(moves)
    add_push_pull(moves)
    add_export(moves)
    add_merge(moves)
    add_attach(moves)
    from bub_nb.imports.formats import FORMATS

    imports = moves.add_parser(
        "import",
        help="write another agent's log (Claude Code, Codex, llm, Agents SDK, ATIF) as a new tape",
        epilog="Formats: " + "; ".join(f"{name}: {what}" for name, what in FORMATS.items()),
    )
    which = imports.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "path", metavar="PATH", nargs="?", help="the log: a .jsonl session, SQLite database or ATIF file"
    )
    which.add_argument("--discover", action="store_true", help="this user's Claude Code, Codex and llm logs, new ones")
    imports.add_argument("--format", choices=list(FORMATS), help="the log's format (default: told from the file)")
    imports.add_argument("--name", help="the new tape's name (default: <format>__<session id>)")
    imports.add_argument("--home", help="Bub home for the tape (default: $BUB_HOME, else ~/.bub)")
    imports.set_defaults(handler=_import)
    add_redact(moves, database)
    add_mcp(commands)
    add_acp(commands)
    add_db(commands)
    parser.epilog = "commands:\n" + "\n".join(f"  {usage}\n      {what}" for usage, what in leaves(commands))
    return parser, moves


def leaves(commands: argparse._SubParsersAction[Parser]) -> list[tuple[str, str]]:
    """Every command a user can type, as its usage line and its help, read from the parsers themselves."""
    found = []
    for choice in commands._choices_actions:
        sub = commands.choices[choice.dest]
        nested = [action for action in sub._actions if isinstance(action, argparse._SubParsersAction)]
        if nested:
            found += leaves(nested[0])
        else:
            usage = " ".join(sub.format_usage().removeprefix("usage:").replace(" [-h]", "").split())
            found.append((usage, choice.help or ""))
    return found


def main(argv: Sequence[str] | None = None) -> int:
    """The command: what it prints shows any control character from a tape, a log or a server as a marker."""
    with visible_terminal():
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    command_line, _moves = parser()
    args = command_line.parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        return int(args.handler(args))
    except (BubNbError, OSError) as exc:
        from bub_nb.tape.open import START_HINT
        from bub_nb.tape.stores.dsn import redact_dsn

        # No command here starts a tape, so how a notebook would start one is left off.
        said = str(exc).removesuffix(START_HINT) if isinstance(exc, TapeNotFoundError) else str(exc)
        print(f"bub-nb: {redact_dsn(said)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
