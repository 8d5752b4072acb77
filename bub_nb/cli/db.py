"""``bub-nb db init|enroll``: set up a PostgreSQL database for shared tapes, and open one for the other commands."""

from __future__ import annotations

import argparse
from typing import Any

from bub_nb.errors import BubNbError


def database(dsn: str, schema: str) -> Any:
    """The database store a DSN names, or one line saying the text is not a DSN."""
    from bub_nb.tape.stores.resolve import database_store

    return database_store(checked_dsn(dsn), schema)


def postgres(module: str) -> Any:
    """A module of the database store; without the postgres extra, the one line ``open_tape`` gives."""
    import importlib

    try:
        return importlib.import_module(f"bub_nb.tape.stores.postgres.{module}")
    except ImportError as error:
        if (error.name or "").partition(".")[0] not in ("psycopg", "psycopg_pool"):
            raise
        raise BubNbError(
            "A postgresql:// store needs the postgres extra: pip install -e '.[postgres]' in the bub_nb checkout"
        ) from None


def add_db(commands: Any) -> None:
    db = commands.add_parser("db", help="set up a PostgreSQL database for shared tapes")
    db_commands = db.add_subparsers(dest="db_command", required=True, metavar="{init,enroll}")
    init = db_commands.add_parser("init", help="create or upgrade the schema and its row-level security")
    init.add_argument("dsn", metavar="DSN", help="postgresql:// DSN of a role that may create schemas and roles")
    init.add_argument("--schema", default="bub_nb", help="schema name (default bub_nb)")
    init.set_defaults(handler=_db_init)
    enroll = db_commands.add_parser("enroll", help="let database roles use the tapes as a class's students or teachers")
    enroll.add_argument("dsn", metavar="DSN", help="postgresql:// DSN of the database's owner")
    enroll.add_argument("class_name", metavar="CLASS", help="the class these roles belong to")
    enroll.add_argument("roles", nargs="+", metavar="ROLE", help="existing database roles")
    enroll.add_argument("--teacher", action="store_true", help="enroll them as teachers, who read the class's tapes")
    enroll.add_argument("--schema", default="bub_nb", help="schema name (default bub_nb)")
    enroll.set_defaults(handler=_db_enroll)


def checked_dsn(dsn: str) -> str:
    """``dsn``, or one line saying the text is not a postgresql:// DSN (its password hidden)."""
    from bub_nb.tape.stores.dsn import is_dsn, redact_dsn

    if not is_dsn(dsn):
        raise BubNbError(f"{redact_dsn(dsn)!r} is not a postgresql:// DSN")
    return dsn


def _db_init(args: argparse.Namespace) -> int:
    from bub_nb.tape.stores.dsn import redact_dsn

    init_database, users_role = postgres("roles").init_database, postgres("schema").users_role
    before, after = init_database(checked_dsn(args.dsn), schema=args.schema)
    done = "is already at" if before == after else f"went from version {before} to"
    print(
        f"Schema {args.schema!r} at {redact_dsn(args.dsn)} {done} version {after}; group role {users_role(args.schema)}"
    )
    return 0


def _db_enroll(args: argparse.Namespace) -> int:
    enroll = postgres("roles").enroll
    enroll(checked_dsn(args.dsn), args.class_name, args.roles, teacher=args.teacher, schema=args.schema)
    who = "teachers" if args.teacher else "students"
    print(f"Class {args.class_name!r}: {', '.join(args.roles)} enrolled as {who}")
    return 0
