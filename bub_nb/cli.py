"""``bub-nb``: run a notebook of ``%%bub`` cells headless, and list tapes."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from bub_nb.errors import BubNbError


def _run(args: argparse.Namespace) -> int:
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    from bub_nb.tape import session_tape_name
    from bub_nb.tape.naming import tapes_home
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
    started = time.perf_counter()
    failed: CellExecutionError | None = None
    try:
        client.execute()
    except CellExecutionError as exc:
        failed = exc
    output.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, output)
    tape = open_tape(session_tape_name(source.parent, source.name), home=os.environ.get("BUB_HOME"))
    cells = sum(1 for cell in notebook.cells if cell.cell_type == "code")
    print(f"Executed notebook: {output.resolve()}  ({cells} code cells, {time.perf_counter() - started:.1f} s)")
    print(f"Tape: {tapes_home() / (tape.name + '.jsonl')}  ({len(tape)} entries, {len(tape.anchor_names())} anchors)")
    if failed is not None:
        name, value = getattr(failed, "ename", "Error"), getattr(failed, "evalue", "")
        print(f"A cell failed: {name}: {value}".rstrip(": "), file=sys.stderr)
        return 1
    return 0


def _tapes(args: argparse.Namespace) -> int:
    from bub_nb.tape.naming import bub_home, recorded_notebook, tapes_home
    from bub_nb.tape.open import file_store, open_tape

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
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except BubNbError as exc:
        print(f"bub-nb: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
