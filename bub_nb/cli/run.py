"""``bub-nb run NOTEBOOK``: execute a notebook headless and say where the executed notebook and its tapes are."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from bub_nb.errors import BubNbError, TapeNotFoundError


def add_run(commands: Any) -> None:
    run = commands.add_parser("run", help="execute a notebook headless and report where its tape is")
    run.add_argument("notebook", metavar="NOTEBOOK", help="the .ipynb file to execute")
    run.add_argument("-o", "--output", help="where to write the executed notebook (default: out/<name>)")
    # argparse formats help with %, so %%%% shows as %%.
    run.add_argument("-m", "--model", help="model for %%%%bub cells (default: $BUB_NB_MODEL, $BUB_MODEL, else offline)")
    run.add_argument("--home", help="Bub home for tapes (default: $BUB_HOME, else ~/.bub)")
    run.add_argument("--timeout", type=int, default=600, help="seconds a cell may take (default 600)")
    run.add_argument("--kernel", default="python3", help="kernel name (default python3)")
    run.set_defaults(handler=_run)


def read_notebook(path: Path, given: str) -> Any:
    """The notebook at ``path``, or one line saying why the file is not one."""
    import warnings

    import nbformat
    from nbformat.reader import NotJSONError

    try:
        with warnings.catch_warnings():  # a notebook saved before cells had ids runs as it is
            warnings.simplefilter("ignore", nbformat.validator.MissingIDFieldWarning)
            return nbformat.read(path, as_version=4)
    except NotJSONError:
        raise BubNbError(f"{given!r} is not a Jupyter notebook: it is not JSON") from None
    except Exception as error:  # nbformat's own errors and a schema's ValidationError share no base class
        reason = str(error).strip().splitlines()[0][:200] if str(error).strip() else type(error).__name__
        raise BubNbError(f"{given!r} is not a Jupyter notebook: {reason}") from None


def _run(args: argparse.Namespace) -> int:
    import nbformat
    from jupyter_client.kernelspec import NoSuchKernel
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    from bub_nb.agent.models.resolve import model_setting
    from bub_nb.tape import session_tape_name
    from bub_nb.tape.locations import tapes_home
    from bub_nb.tape.open import open_tape

    source = Path(args.notebook).expanduser().resolve()
    if not source.is_file():
        raise BubNbError(f"Notebook {args.notebook!r} does not exist")
    notebook = read_notebook(source, args.notebook)
    output = Path(args.output).expanduser() if args.output else Path("out") / source.name
    if args.model:  # bub_nb's own variable: Bub reads BUB_MODEL too, and cannot read 'offline'
        os.environ["BUB_NB_MODEL"] = args.model
    if args.home:
        os.environ["BUB_HOME"] = str(Path(args.home).expanduser().resolve())
    # The kernel names its tape after the notebook, as Jupyter's server would tell it.
    os.environ["JPY_SESSION_NAME"] = str(source)
    model = setting[1] if (setting := model_setting()) else "offline"

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
    database = os.environ.get("BUB_STORE") or None  # the kernel writes there, as BubMagics.store does
    before = {} if database else _sizes(tapes_home())
    failed: CellExecutionError | None = None
    try:
        client.execute()
    except CellExecutionError as exc:
        failed = exc
    except NoSuchKernel:
        raise BubNbError(f"No Jupyter kernel named {args.kernel!r} (jupyter kernelspec list shows them)") from None
    output.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, output)
    name = session_tape_name(source.parent, source.name)
    cells = sum(1 for cell in notebook.cells if cell.cell_type == "code")
    print(f"Executed notebook: {output.resolve()}  ({cells} code cells, {time.perf_counter() - started:.1f} s)")
    if database:
        try:
            tapes = [open_tape(name, store=database, create=False)]
        except TapeNotFoundError:
            tapes = []
    else:
        # A lesson (%lesson start NAME) or %tape use writes another tape than the notebook's own: name what grew.
        tapes = [open_tape(path) for path in _grown(tapes_home(), before)]
    for tape in tapes:
        where = tape.location if database else tapes_home() / (tape.name + ".jsonl")
        print(f"Tape: {where}  ({len(tape)} entries, {len(tape.anchor_names())} anchors)")
    if not tapes:
        print(f"Tape: none written {'to the database' if database else f'under {tapes_home()}'}")
    if failed is not None:
        name, value = getattr(failed, "ename", "Error"), getattr(failed, "evalue", "")
        print(f"A cell failed: {name}: {value}".rstrip(": "), file=sys.stderr)
        return 1
    return 0


def _sizes(folder: Path) -> dict[Path, int]:
    """Each tape file of ``folder`` and its size: a tape written to is one whose size changed."""
    return {path: path.stat().st_size for path in folder.glob("*.jsonl") if path.stem != "session_graph"}


def _grown(folder: Path, before: dict[Path, int]) -> list[Path]:
    """The tape files of ``folder`` that are new or changed size since ``before``, oldest change first."""
    after = _sizes(folder)
    grown = [path for path, size in after.items() if before.get(path) != size]
    return sorted(grown, key=lambda path: (path.stat().st_mtime_ns, path.name))
