"""``bub-nb``: run a notebook of ``%%bub`` cells headless, list tapes, move them to and from a database, export them."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bub_nb.cli.redact import add_redact
from bub_nb.errors import BubNbError

if TYPE_CHECKING:
    from bub_nb.tape import Tape


def _run(args: argparse.Namespace) -> int:
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    from bub_nb.tape import session_tape_name
    from bub_nb.tape.locations import tapes_home
    from bub_nb.tape.open import open_tape

    source = Path(args.notebook).expanduser().resolve()
    if not source.is_file():
        raise BubNbError(f"Notebook {args.notebook!r} does not exist")
    output = Path(args.output).expanduser() if args.output else Path("out") / source.name
    if args.model:
        os.environ["BUB_MODEL"] = args.model
    if args.home:
        os.environ["BUB_HOME"] = str(Path(args.home).expanduser().resolve())
    os.environ.setdefault("BUB_MODEL", "offline")
    # The kernel names its tape after the notebook, as Jupyter's server would tell it.
    os.environ["JPY_SESSION_NAME"] = str(source)
    model = os.environ["BUB_MODEL"]

    notebook = nbformat.read(source, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=args.timeout,
        kernel_name=args.kernel,
        resources={"metadata": {"path": str(source.parent)}},
        # the kernel's start-up chatter (a local TCP notice) is not the notebook's output
        extra_arguments=["--IPKernelApp.log_level=ERROR"],
    )
    print(f"Running {source.name} on model {model!r} …", flush=True)
    started, began = time.perf_counter(), time.time()
    failed: CellExecutionError | None = None
    try:
        client.execute()
    except CellExecutionError as exc:
        failed = exc
    output.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, output)
    name = session_tape_name(source.parent, source.name)
    database = os.environ.get("BUB_STORE") or None  # the kernel wrote there, as BubMagics.store does
    cells = sum(1 for cell in notebook.cells if cell.cell_type == "code")
    print(f"Executed notebook: {output.resolve()}  ({cells} code cells, {time.perf_counter() - started:.1f} s)")
    # A lesson (%lesson start NAME) or %tape use writes another tape than the notebook's own: name what was written.
    written = [] if database else _written_since(tapes_home(), began)
    for tape in written or [open_tape(name, store=database) if database else open_tape(name)]:
        where = tape.location if database else tapes_home() / (tape.name + ".jsonl")
        print(f"Tape: {where}  ({len(tape)} entries, {len(tape.anchor_names())} anchors)")
    if failed is not None:
        name, value = getattr(failed, "ename", "Error"), getattr(failed, "evalue", "")
        print(f"A cell failed: {name}: {value}".rstrip(": "), file=sys.stderr)
        return 1
    return 0


def _written_since(folder: Path, began: float) -> list[Tape]:
    """The tapes of ``folder`` a run wrote to, oldest change first."""
    from bub_nb.tape.open import open_tape

    paths = [path for path in folder.glob("*.jsonl") if path.stat().st_mtime >= began and path.stem != "session_graph"]
    return [open_tape(path) for path in sorted(paths, key=lambda path: path.stat().st_mtime)]


def _database(dsn: str, schema: str) -> Any:
    from bub_nb.tape.stores.dsn import is_dsn, redact_dsn
    from bub_nb.tape.stores.resolve import database_store

    if not is_dsn(dsn):
        raise BubNbError(f"{redact_dsn(dsn)!r} is not a postgresql:// DSN")
    return database_store(dsn, schema)


def _postgres(module: str) -> Any:
    """A module of the database store; without the postgres extra, the one line ``open_tape`` gives."""
    import importlib

    try:
        return importlib.import_module(f"bub_nb.tape.stores.postgres.{module}")
    except ImportError as error:
        if (error.name or "").partition(".")[0] not in ("psycopg", "psycopg_pool"):
            raise
        raise BubNbError("A postgresql:// store needs the postgres extra: pip install 'bub_nb[postgres]'") from None


def _push(args: argparse.Namespace) -> int:
    push = _postgres("sync").push
    *home, dsn = args.places
    if len(home) > 1:
        raise BubNbError("bub-nb tapes push takes [HOME] DSN")
    store = _database(dsn, args.schema)
    copied = push(home[0] if home else None, store)
    print(copied.describe("Pushed", f"to {store.location}"))
    return 1 if copied.left_alone else 0


def _pull(args: argparse.Namespace) -> int:
    from bub_nb.tape.locations import tapes_home

    pull = _postgres("sync").pull
    dsn, *home = args.places
    if len(home) > 1:
        raise BubNbError("bub-nb tapes pull takes DSN [HOME]")
    store = _database(dsn, args.schema)
    copied = pull(store, home[0] if home else None)
    print(copied.describe("Pulled", f"into {tapes_home(home[0] if home else None)}"))
    return 1 if copied.left_alone else 0


def _import(args: argparse.Namespace) -> int:
    from bub_nb.imports import import_log

    report = import_log(args.path, args.format, name=args.name, home=args.home)
    print(report.describe())
    print(f"Tape: {report.location}")
    return 0


def _db_init(args: argparse.Namespace) -> int:
    from bub_nb.tape.stores.dsn import redact_dsn

    init_database, users_role = _postgres("roles").init_database, _postgres("schema").users_role
    before, after = init_database(args.dsn, schema=args.schema)
    done = "is already at" if before == after else f"went from version {before} to"
    print(
        f"Schema {args.schema!r} at {redact_dsn(args.dsn)} {done} version {after}; group role {users_role(args.schema)}"
    )
    return 0


def _db_enroll(args: argparse.Namespace) -> int:
    enroll = _postgres("roles").enroll
    enroll(args.dsn, args.class_name, args.roles, teacher=args.teacher, schema=args.schema)
    who = "teachers" if args.teacher else "students"
    print(f"Class {args.class_name!r}: {', '.join(args.roles)} enrolled as {who}")
    return 0


def _tapes(args: argparse.Namespace) -> int:
    from bub_nb.tape.locations import bub_home, recorded_notebook, tapes_home
    from bub_nb.tape.open import open_tape
    from bub_nb.tape.stores.resolve import file_store

    home = args.home_folder or args.home
    if home is not None and not bub_home(home).is_dir():
        raise BubNbError(f"Bub home {str(bub_home(home))!r} is not a folder, so it holds no tapes")
    store = file_store(tapes_home(home))
    names = store.list_tapes()
    if not names:
        print(f"No tapes under {store.directory}")
        return 0
    width = max(len(name) for name in names)
    for name in names:
        tape = open_tape(name, store=store)
        info = tape.info()
        notebook = recorded_notebook(tape) or "-"
        print(
            f"{name:<{width}}  {info.entries:>7} entries  {info.anchors:>4} anchors  "
            f"last: {info.last_anchor or '-'}  notebook: {notebook}"
        )
    return 0


def _export(args: argparse.Namespace) -> int:
    from bub_nb.tape.open import open_tape

    if args.parquet is not None:
        from bub_nb.tape.frames.saved import write_parquet
        from bub_nb.tape.locations import tapes_home
        from bub_nb.tape.stores.resolve import file_store

        names = args.names or file_store(tapes_home(args.home)).list_tapes()  # every tape when none is named
        tapes = [open_tape(name, home=args.home, create=False) for name in names]  # every name, before writing
        for path in write_parquet(tapes, args.parquet):
            print(path)
        return 0
    from bub_nb.export import otel

    if not args.names:
        raise BubNbError("bub-nb tapes export --otlp URL needs the names of the tapes to send")
    tapes = [open_tape(name, home=args.home, create=False) for name in args.names]  # every name, before sending
    for tape in tapes:
        print(otel(tape, args.otlp, content=True if args.content else None, timeout=args.timeout))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bub-nb", description="bub_nb: Bub's tape model in Jupyter.")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="execute a notebook headless and report where its tape is")
    run.add_argument("notebook", help="the .ipynb file to execute")
    run.add_argument("-o", "--output", help="where to write the executed notebook (default: out/<name>)")
    run.add_argument("-m", "--model", help="model for %%bub cells (default: $BUB_MODEL, else offline)")
    run.add_argument("--home", help="Bub home for tapes (default: $BUB_HOME, else ~/.bub)")
    run.add_argument("--timeout", type=int, default=600, help="seconds a cell may take (default 600)")
    run.add_argument("--kernel", default="python3", help="kernel name (default python3)")
    run.set_defaults(handler=_run)
    tapes = commands.add_parser("tapes", help="list the tapes under the Bub home, with the notebook of each")
    tapes.add_argument("home_folder", nargs="?", metavar="HOME", help="Bub home (default: $BUB_HOME, else ~/.bub)")
    tapes.add_argument("--home", help="the same, as an option")
    tapes.set_defaults(handler=_tapes)
    tapes.epilog = (
        "bub-nb tapes push [HOME] DSN and bub-nb tapes pull DSN [HOME] move tapes to and from a database; "
        "bub-nb tapes export --otlp URL NAME... sends tapes to an OpenTelemetry receiver; "
        "bub-nb tapes export --parquet DIR [NAME...] writes them as Parquet files; "
        "bub-nb tapes import PATH writes another agent's log as a new tape; "
        "bub-nb tapes redact NAME --entry ID replaces a pasted secret everywhere it was copied."
    )
    # push, pull, export and import are parsed on their own: a HOME positional and sub-commands cannot share a parser.
    moving = argparse.ArgumentParser(
        prog="bub-nb tapes",
        description="Move tapes to and from a database, send them to a receiver, or bring other agents' logs in.",
    )
    moves = moving.add_subparsers(dest="move", required=True)
    push = moves.add_parser("push", help="copy a Bub home's tapes into a database (only what is new)")
    push.add_argument("places", nargs="+", metavar="[HOME] DSN", help="Bub home (default $BUB_HOME), then a DSN")
    push.add_argument("--schema", default="bub_nb", help="schema name (default bub_nb)")
    push.set_defaults(handler=_push)
    pull = moves.add_parser("pull", help="copy a database's tapes into a Bub home as files (only what is new)")
    pull.add_argument("places", nargs="+", metavar="DSN [HOME]", help="a DSN, then a Bub home (default $BUB_HOME)")
    pull.add_argument("--schema", default="bub_nb", help="schema name (default bub_nb)")
    pull.set_defaults(handler=_pull)
    export = moves.add_parser(
        "export", help="send tapes to an OpenTelemetry receiver (a trace a turn), or write them as Parquet files"
    )
    export.add_argument("names", nargs="*", metavar="NAME", help="tape names (or .jsonl paths); --parquet: all if none")
    target = export.add_mutually_exclusive_group(required=True)
    target.add_argument("--otlp", metavar="URL", help="OTLP/HTTP endpoint, e.g. http://127.0.0.1:6006")
    target.add_argument("--parquet", metavar="DIR", help="write DIR/<tape>.parquet per tape, the columns of to_frame()")
    export.add_argument("--home", help="Bub home (default: $BUB_HOME, else ~/.bub)")
    export.add_argument("--content", action="store_true", help="include messages, tool arguments and results")
    export.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for the receiver (default 10)")
    export.set_defaults(handler=_export)
    from bub_nb.imports.formats import FORMATS

    imports = moves.add_parser(
        "import",
        help="write another agent's log (Claude Code, Codex, llm, Agents SDK, ATIF) as a new tape",
        epilog="Formats: " + "; ".join(f"{name}: {what}" for name, what in FORMATS.items()),
    )
    imports.add_argument("path", metavar="PATH", help="the log: a .jsonl session, a SQLite database or trajectory.json")
    imports.add_argument("--format", choices=list(FORMATS), help="the log's format (default: told from the file)")
    imports.add_argument("--name", help="the new tape's name (default: <format>__<session id>)")
    imports.add_argument("--home", help="Bub home for the tape (default: $BUB_HOME, else ~/.bub)")
    imports.set_defaults(handler=_import)
    add_redact(moves, _database)
    db = commands.add_parser("db", help="set up a PostgreSQL database for shared tapes")
    db_commands = db.add_subparsers(dest="db_command", required=True)
    init = db_commands.add_parser("init", help="create or upgrade the schema and its row-level security")
    init.add_argument("dsn", help="postgresql:// DSN of a role that may create schemas and roles")
    init.add_argument("--schema", default="bub_nb", help="schema name (default bub_nb)")
    init.set_defaults(handler=_db_init)
    enroll = db_commands.add_parser("enroll", help="let database roles use the tapes as a class's students or teachers")
    enroll.add_argument("dsn", help="postgresql:// DSN of the database's owner")
    enroll.add_argument("class_name", metavar="CLASS", help="the class these roles belong to")
    enroll.add_argument("roles", nargs="+", metavar="ROLE", help="existing database roles")
    enroll.add_argument("--teacher", action="store_true", help="enroll them as teachers, who read the class's tapes")
    enroll.add_argument("--schema", default="bub_nb", help="schema name (default bub_nb)")
    enroll.set_defaults(handler=_db_enroll)
    words = list(sys.argv[1:] if argv is None else argv)
    is_move = words[:1] == ["tapes"] and words[1:2] in (["push"], ["pull"], ["export"], ["import"], ["redact"])
    args = moving.parse_args(words[1:]) if is_move else parser.parse_args(words)
    try:
        return int(args.handler(args))
    except BubNbError as exc:
        from bub_nb.tape.stores.dsn import redact_dsn

        print(f"bub-nb: {redact_dsn(str(exc))}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
