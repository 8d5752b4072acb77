"""``bub-nb tapes redact NAME --entry ID``: a pasted secret replaced in the tape and every copy of it."""

from __future__ import annotations

import argparse
from typing import Any


def add_redact(moves: Any, database: Any) -> None:
    """Add ``redact`` to the ``bub-nb tapes`` subcommands; ``database(dsn, schema)`` opens a database store."""
    redact = moves.add_parser("redact", help="replace entries' text in place, in the tape and every copy (secrets)")
    redact.add_argument("name", metavar="NAME", help="the tape's name (or .jsonl path)")
    redact.add_argument("--entry", type=int, action="append", required=True, metavar="ID", help="an id; repeatable")
    redact.add_argument("--home", help="Bub home (default: $BUB_HOME, else ~/.bub)")
    redact.add_argument("--database", action="append", default=[], metavar="DSN", help="also rewrite pushed copies")
    redact.add_argument("--schema", default="bub_nb", help="the database's schema name (default bub_nb)")
    redact.add_argument("--by", help="who redacts, for the redact event (default: the login name)")
    redact.set_defaults(handler=lambda args: _redact(args, database))


def _redact(args: argparse.Namespace, database: Any) -> int:
    from bub_nb.tape.open import open_tape

    tape = open_tape(args.name, home=args.home, create=False)
    stores = [database(dsn, args.schema) for dsn in args.database]  # every DSN opens before anything is rewritten
    event = tape.redact(args.entry, by=args.by, databases=stores)
    data = event.payload["data"]
    copies = sum(last - first + 1 for spans in data["copies"].values() for first, last in spans)
    print(
        f"Redacted {len(set(args.entry))} entries of {tape.name} in place, {copies} copies in "
        f"{len(data['copies'])} other files and {data['database']} in databases; recorded as entry #{event.id}"
    )
    return 0
