"""``bub-nb tapes list|push|pull|export|merge|attach``: a Bub home's tapes listed, moved to and from a database,
exported, two copies of one tape merged, and a notebook's tape attached beside it or taken up from there."""

from __future__ import annotations

import argparse
from typing import Any

from bub_nb.cli.db import database, postgres
from bub_nb.errors import BubNbError, ExportError


def add_list(moves: Any) -> None:
    tapes = moves.add_parser("list", help="list the tapes under the Bub home, with the notebook of each")
    tapes.add_argument("home", nargs="?", metavar="HOME", help="Bub home (default: $BUB_HOME, else ~/.bub)")
    tapes.set_defaults(handler=_list)


def add_push_pull(moves: Any) -> None:
    push = moves.add_parser("push", help="copy a Bub home's tapes into a database (only what is new)")
    push.add_argument("home", nargs="?", metavar="HOME", help="Bub home (default: $BUB_HOME, else ~/.bub)")
    push.add_argument("dsn", metavar="DSN", help="postgresql:// DSN of the database")
    push.add_argument("--schema", default="bub_nb", help="schema name (default bub_nb)")
    push.set_defaults(handler=_push)
    pull = moves.add_parser("pull", help="copy a database's tapes into a Bub home as files (only what is new)")
    pull.add_argument("dsn", metavar="DSN", help="postgresql:// DSN of the database")
    pull.add_argument("home", nargs="?", metavar="HOME", help="Bub home (default: $BUB_HOME, else ~/.bub)")
    pull.add_argument("--schema", default="bub_nb", help="schema name (default bub_nb)")
    pull.set_defaults(handler=_pull)


def add_export(moves: Any) -> None:
    export = moves.add_parser(
        "export", help="send tapes to an OpenTelemetry receiver (a trace a turn), or write them as Parquet files"
    )
    export.add_argument(
        "names", nargs="*", metavar="NAME", help="tape names (or .jsonl paths); --parquet, --dataset: all if none"
    )
    target = export.add_mutually_exclusive_group(required=True)
    target.add_argument("--otlp", metavar="URL", help="OTLP/HTTP endpoint, e.g. http://127.0.0.1:6006")
    target.add_argument("--parquet", metavar="DIR", help="write DIR/<tape>.parquet per tape, the columns of to_frame()")
    target.add_argument(
        "--dataset",
        metavar="DIR",
        help="add what is new since the last export to a Parquet dataset at DIR, by day and tape (day=/tape=)",
    )
    export.add_argument("--home", help="Bub home (default: $BUB_HOME, else ~/.bub)")
    export.add_argument("--content", action="store_true", help="include messages, tool arguments and results")
    export.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for the receiver (default 10)")
    export.set_defaults(handler=_export)


def add_merge(moves: Any) -> None:
    merge = moves.add_parser(
        "merge",
        help="merge two copies of one tape (two clones' appends): the other's new entries renumbered after A's",
    )
    merge.add_argument("first", metavar="A", help="the tape file kept as it is and merged into (.jsonl)")
    merge.add_argument(
        "second", nargs="?", metavar="B", help="the other copy (.jsonl); without it, the sides A itself holds"
    )
    merge.set_defaults(handler=_merge)


def add_attach(moves: Any) -> None:
    attach = moves.add_parser(
        "attach",
        help="write a notebook's tape beside it as NOTEBOOK.tape.jsonl (to share it), or --import that file",
    )
    attach.add_argument("notebook", metavar="NOTEBOOK", help="the notebook (.ipynb) whose tape travels with it")
    attach.add_argument("--home", help="Bub home (default: $BUB_HOME, else ~/.bub)")
    attach.add_argument(
        "--import",
        dest="take_up",
        action="store_true",
        help="take the attached file up as the notebook's tape in a Bub home that lacks it",
    )
    attach.set_defaults(handler=_attach)


def _attach(args: argparse.Namespace) -> int:
    from bub_nb.tape.attach import attach, import_attached, notebook_tape_name
    from bub_nb.tape.open import open_tape

    if args.take_up:
        done = import_attached(args.notebook, home=args.home)
        print(f"Imported {done.entries} entries into tape {done.tape} at {done.path}")
        return 0
    tape = open_tape(notebook_tape_name(args.notebook), home=args.home, create=False)
    done = attach(tape, args.notebook, home=args.home)
    print(f"Attached {done.entries} entries of tape {done.tape} to {done.path}")
    return 0


def _merge(args: argparse.Namespace) -> int:
    from bub_nb.tape.forks.merge import merge_tapes

    print(merge_tapes(args.first, args.second).describe())
    return 0


def _list(args: argparse.Namespace) -> int:
    from bub_nb.tape import Tape
    from bub_nb.tape.locations import bub_home, recorded_notebook, tapes_home
    from bub_nb.tape.open import open_tape
    from bub_nb.tape.sidecars import owners_and_sidecars
    from bub_nb.tape.stores.cloudevents import CloudEventsTapeStore, is_cloudevents_file
    from bub_nb.tape.stores.resolve import file_store

    home = args.home
    if home is not None and not bub_home(home).is_dir():
        raise BubNbError(f"Bub home {str(bub_home(home))!r} is not a folder, so it holds no tapes")
    store = file_store(tapes_home(home))
    names = store.list_tapes()
    if not names:
        print(f"No tapes under {store.directory}")
        return 0
    owners = owners_and_sidecars(names)  # Bub's sidecar tapes are listed under the tape they are mounted on
    width = max(len(name) for name in owners)
    for name, sidecars in owners.items():
        mounted = f"  sidecars: {', '.join(sidecars)}" if sidecars else ""
        if not store.exists(name):
            print(f"{name:<{width}}  (no entries of its own){mounted}")
            continue
        cloud = is_cloudevents_file(store.path_for(name))  # Bub's next format: read by its own reader
        tape = Tape(name, CloudEventsTapeStore(store.path_for(name), name)) if cloud else open_tape(name, store=store)
        info = tape.info()
        notebook = recorded_notebook(tape) or "-"
        print(
            f"{name:<{width}}  {info.entries:>7} entries  {info.anchors:>4} anchors  "
            f"last: {info.last_anchor or '-'}  notebook: {notebook}{mounted}{'  format: cloudevents' * cloud}"
        )
    return 0


def _push(args: argparse.Namespace) -> int:
    push = postgres("sync").push
    store = database(args.dsn, args.schema)
    copied = push(args.home, store)
    print(copied.describe("Pushed", f"to {store.location}"))
    return 1 if copied.left_alone else 0


def _pull(args: argparse.Namespace) -> int:
    from bub_nb.tape.locations import tapes_home

    pull = postgres("sync").pull
    store = database(args.dsn, args.schema)
    copied = pull(store, args.home)
    print(copied.describe("Pulled", f"into {tapes_home(args.home)}"))
    return 1 if copied.left_alone else 0


def _export(args: argparse.Namespace) -> int:
    from bub_nb.tape.open import open_tape

    if args.dataset is not None:
        from bub_nb.tape.frames.dataset import export_dataset

        print(export_dataset(args.dataset, args.home, args.names).describe())
        return 0
    if args.parquet is not None:
        from bub_nb.tape.frames.saved import write_parquet
        from bub_nb.tape.locations import tapes_home
        from bub_nb.tape.stores.resolve import file_store

        names = args.names or file_store(tapes_home(args.home)).list_tapes()  # every tape when none is named
        tapes = [open_tape(name, home=args.home, create=False) for name in names]  # every name, before writing
        for path in write_parquet(tapes, args.parquet):
            print(path)
        return 0
    import logging

    from bub_nb.export import otel
    from bub_nb.export.otlp import traces_url

    if not args.names:
        raise BubNbError("bub-nb tapes export --otlp URL needs the names of the tapes to send")
    tapes = [open_tape(name, home=args.home, create=False) for name in args.names]  # every name, before sending
    answering(traces_url(args.otlp), args.timeout)
    # The exporter logs each failed attempt; a refusal here is the one line main() prints.
    logging.getLogger("opentelemetry").setLevel(logging.CRITICAL)
    for tape in tapes:
        print(otel(tape, args.otlp, content=True if args.content else None, timeout=args.timeout))
    return 0


def answering(url: str, timeout: float) -> None:
    """One line, at once, when nothing listens at ``url``: the exporter would retry a refused connection for
    as long as its timeout allows."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((parts.hostname or "localhost", port), timeout=timeout).close()
    except OSError as error:
        raise ExportError(f"Nothing answers at {url}: {error.strerror or error}") from None
