"""``bub-nb tapes redact``: a pasted secret replaced wherever it occurs, by its text or by the entry holding it."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from bub_nb.errors import BubNbError


def add_redact(moves: Any, database: Any) -> None:
    """Add ``redact`` to the ``bub-nb tapes`` subcommands; ``database(dsn, schema)`` opens a database store."""
    redact = moves.add_parser(
        "redact",
        help="replace a secret's text in place wherever it occurs: every tape, archive and copy (secrets)",
        epilog="--text - reads the secret from standard input, so it stays out of the shell's history.",
    )
    redact.add_argument("name", nargs="?", metavar="NAME", help="with --entry: the tape's name (or .jsonl path)")
    which = redact.add_mutually_exclusive_group(required=True)
    which.add_argument("--entry", type=int, action="append", metavar="ID", help="an entry holding it; repeatable")
    which.add_argument("--text", metavar="SECRET", help="the secret's text (- reads it from standard input)")
    redact.add_argument("--home", help="Bub home (default: $BUB_HOME, else ~/.bub)")
    redact.add_argument("--store", metavar="DSN", help="with --text: redact in this database store, not the home")
    redact.add_argument("--database", action="append", default=[], metavar="DSN", help="also rewrite pushed copies")
    redact.add_argument("--schema", default="bub_nb", help="the database's schema name (default bub_nb)")
    redact.add_argument("--by", help="who redacts, for the redact event (default: the login name)")
    redact.add_argument(
        "--ipython-history",
        nargs="?",
        const=True,
        default=False,
        metavar="PATH",
        help="also scrub IPython's history database (default: the default profile's)",
    )
    redact.set_defaults(handler=lambda args: _redact(args, database))


def _redact(args: argparse.Namespace, database: Any) -> int:
    if args.text is not None:
        return _redact_text(args, database)
    from bub_nb.tape.open import open_tape

    if args.name is None or args.store is not None:
        raise BubNbError("bub-nb tapes redact NAME --entry ID names the tape; --store goes with --text")
    tape = open_tape(args.name, home=args.home, create=False)
    stores = [database(dsn, args.schema) for dsn in args.database]  # every DSN opens before anything is rewritten
    event = tape.redact(args.entry, by=args.by, databases=stores)
    data = event.payload["data"]
    copies = sum(last - first + 1 for spans in data["copies"].values() for first, last in spans)
    print(
        f"Redacted {len(set(args.entry))} entries of {tape.name} in place, {copies} copies in "
        f"{len(data['copies'])} other files and {data['database']} in databases; recorded as entry #{event.id}"
    )
    if args.ipython_history:
        print("--ipython-history goes with --text: the history holds the secret's text, not an entry")
    return 0


def _redact_text(args: argparse.Namespace, database: Any) -> int:
    from bub_nb.tape.corrections.by_value import redact_text

    if args.name is not None:
        raise BubNbError("bub-nb tapes redact --text SECRET redacts a whole home or --store; it takes no NAME")
    text = sys.stdin.read().rstrip("\r\n") if args.text == "-" else args.text
    store = database(args.store, args.schema) if args.store else None
    copies = [database(dsn, args.schema) for dsn in args.database]  # every DSN opens before anything is rewritten
    history = args.ipython_history
    done = redact_text(text, home=args.home, store=store, by=args.by, databases=copies, ipython_history=history)
    print(done.report())
    return 0
