"""The frame and the Arrow table on three shapes of tape, each beside the readers an analyst would reach for.

- short messages only (a user's line and the answer, nothing else: where the readers are fastest);
- the mixed corpus of ``corpus.py`` (system prompts, tool rounds, ``run`` events, anchors);
- Bub's own tapes (``examples/data/bub-home/tapes``) repeated with their ids renumbered: spaced JSON, and
  older lines that carry a ``timestamp`` where the others have their ``date``.

On each, with both readers (the native one, DuckDB, and the plain one): ``to_frame()`` against
``pandas.read_json(lines=True)`` (target <= 0.35x) and ``to_arrow()`` against ``polars.read_ndjson`` (target
<= 1.0x, <= 1.5x on short messages); the fresh-process rows use the native one.
Each figure and its baseline run in turn, ``--runs`` times, and the
best of each is kept (the machine may be shared). The load average is printed before and after. A row per shape
splits ``to_frame()`` into decoding the lines into columns and building the frame from them.

Timed in one process, each reader runs on the heap the other left behind, and that moves a figure by a tenth
or more (docs/performance.md). So each pair is also timed with every call in a fresh process of its own (its
imports and first calls paid on a small tape before the clock starts), the rows marked "fresh process".

    python benchmarks/shapes.py [--size 200000] [--runs 3]
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import corpus
import orjson
from _common import cache_dir, main_at_scale, ms
from scale import _ratio, in_turn

from bub_nb.tape import open_tape
from bub_nb.tape._lines import gc_paused
from bub_nb.tape.frames.arrow import columns_to_arrow
from bub_nb.tape.frames.frame import columns_to_frame
from bub_nb.tape.frames.native import reader as use

RUNS = 3
BUB_TAPES = Path(__file__).resolve().parent.parent / "examples" / "data" / "bub-home" / "tapes"


def short_tape(entries: int) -> Path:
    """A tape of short chat messages only, built once and cached by size."""
    path = cache_dir("shapes") / f"short-{entries}.jsonl"
    if not path.exists():
        with open(path.with_suffix(".partial"), "wb") as handle:
            for number in range(1, entries + 1):
                role = "user" if number % 2 else "assistant"
                payload = {"role": role, "content": f"message {number}"}
                date = (corpus.START + timedelta(milliseconds=number)).isoformat()
                line = {"id": number, "kind": "message", "payload": payload, "meta": {}, "date": date}
                handle.write(orjson.dumps(line) + b"\n")
        path.with_suffix(".partial").replace(path)
    return path


def bub_tape(entries: int) -> Path:
    """Bub's own tapes one after another, over and over, renumbered from 1 (cached by size)."""
    path = cache_dir("shapes") / f"bub-{entries}.jsonl"
    if not path.exists():
        lines = [line for tape in sorted(BUB_TAPES.glob("*.jsonl")) for line in tape.read_bytes().splitlines()]
        records = [orjson.loads(line) for line in lines if line.strip()]
        with open(path.with_suffix(".partial"), "wb") as handle:
            for number, record in enumerate(itertools.islice(itertools.cycle(records), entries), start=1):
                handle.write(orjson.dumps({**record, "id": number}) + b"\n")
        path.with_suffix(".partial").replace(path)
    return path


# One timed call in a process of its own: the imports and first calls paid on a small tape, then the clock.
_FRESH = """
import sys, time
from pathlib import Path
sys.path[:0] = [sys.argv[1]]
import pandas as pd, polars
from bub_nb.tape import open_tape
path, warm, reader = Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]
def call_on(file):
    if reader in ("to_frame", "to_arrow"):
        tape = open_tape(file)
        tape.from_last_anchor()  # the index built, as in the same-process figures
        return getattr(tape, reader)
    return {"read_json": lambda: pd.read_json(file, lines=True), "polars": lambda: polars.read_ndjson(file)}[reader]
call_on(warm)()
call = call_on(path)
start = time.perf_counter()
call()
print(time.perf_counter() - start)
"""


def fresh(reader: str, path: Path, warm: Path) -> float:
    """Seconds of one call of ``reader`` on ``path`` in a new Python process."""
    root = str(Path(__file__).resolve().parent.parent)
    done = subprocess.run(
        [sys.executable, "-c", _FRESH, root, str(path), str(warm), reader],
        capture_output=True, text=True, check=True, env={**os.environ, "BUB_NB_READER": "native"},
    )  # fmt: skip
    return float(done.stdout.split()[-1])


def in_fresh_processes(first: str, second: str, path: Path, warm: Path, runs: int) -> tuple[float, float]:
    """The best seconds of each reader, each call in a fresh process, the two in turn ``runs`` times."""
    best = [float("inf"), float("inf")]
    for _ in range(runs):
        for slot, reader in enumerate((first, second)):
            best[slot] = min(best[slot], fresh(reader, path, warm))
    return best[0], best[1]


def _split(tape: Any, runs: int) -> tuple[float, float, float]:
    """Where the time goes: decoding the lines into columns, then building the frame (or table) from them."""
    with gc_paused():
        columns = tape.store.columns(tape.name)
        (build, _), (decode, _) = in_turn(
            lambda: columns_to_frame(columns, names=tape.name), lambda: tape.store.columns(tape.name), runs
        )
        (build_arrow, _), _ = in_turn(lambda: columns_to_arrow(columns, names=tape.name), lambda: None, runs)
    return decode, build, build_arrow


def _native(call: Any) -> Any:
    """``call`` run with the native reader (DuckDB)."""

    def run() -> Any:
        with use("native"):
            return call()

    return run


def _pure(call: Any) -> Any:
    """``call`` run with the plain reader."""

    def run() -> Any:
        with use("pure"):
            return call()

    return run


def shape_rows(shape: str, path: Path, runs: int) -> list[list[Any]]:
    import pandas as pd
    import polars

    tape = open_tape(path)
    tape.from_last_anchor()  # the index built: the figures are of reading, not of a first open
    # each reader beside its baseline in turn, so a figure and its baseline see the same load
    (frame, _), (pandas, _) = in_turn(_native(tape.to_frame), lambda: pd.read_json(path, lines=True), runs)
    (pure_frame, _), (pandas_2, _) = in_turn(_pure(tape.to_frame), lambda: pd.read_json(path, lines=True), runs)
    (arrow, _), (base, _) = in_turn(_native(tape.to_arrow), lambda: polars.read_ndjson(path), runs)
    (pure_arrow, _), (base_2, _) = in_turn(_pure(tape.to_arrow), lambda: polars.read_ndjson(path), runs)
    decode, build, build_arrow = _split(tape, runs)
    split = f"decode {ms(decode)} + build {ms(build)}"
    warm = short_tape(10_000)
    fresh_frame, fresh_pandas = in_fresh_processes("to_frame", "read_json", path, warm, runs)
    fresh_arrow, fresh_polars = in_fresh_processes("to_arrow", "polars", path, warm, runs)
    frame_target, arrow_target = "<= 0.35x", "<= 1.5x" if "short" in shape else "<= 1.0x"
    read_json, read_ndjson = "(pandas.read_json lines)", "(polars.read_ndjson)"
    return [
        [f"{shape}: plain reader, where the time goes", split, f"to_arrow build {ms(build_arrow)}", "", ""],
        [f"{shape}: to_frame(), native", ms(frame), f"{ms(pandas)} {read_json}", _ratio(frame, pandas), frame_target],
        [
            f"{shape}: to_frame(), plain",
            ms(pure_frame),
            f"{ms(pandas_2)} {read_json}",
            _ratio(pure_frame, pandas_2),
            "",
        ],
        [f"{shape}: to_arrow(), native", ms(arrow), f"{ms(base)} {read_ndjson}", _ratio(arrow, base), arrow_target],
        [
            f"{shape}: to_arrow(), plain",
            ms(pure_arrow),
            f"{ms(base_2)} {read_ndjson}",
            _ratio(pure_arrow, base_2),
            "",
        ],
        [
            f"{shape}: to_frame(), native, fresh process",
            ms(fresh_frame),
            f"{ms(fresh_pandas)} {read_json}",
            _ratio(fresh_frame, fresh_pandas),
            frame_target,
        ],
        [
            f"{shape}: to_arrow(), native, fresh process",
            ms(fresh_arrow),
            f"{ms(fresh_polars)} {read_ndjson}",
            _ratio(fresh_arrow, fresh_polars),
            arrow_target,
        ],
    ]


def rows(size: int, runs: int = RUNS) -> list[list[Any]]:
    for chosen in ("native", "pure"):  # imports and first calls, paid once
        with use(chosen):
            open_tape(short_tape(10_000)).to_frame()
            open_tape(short_tape(10_000)).to_arrow()
    shapes = {
        "short messages": short_tape(size),
        "mixed corpus": corpus.cached_tape(size),
        "Bub's tapes": bub_tape(size),
    }
    return [row for shape, path in shapes.items() for row in shape_rows(f"{size:,} {shape}", path, runs)]


if __name__ == "__main__":
    main_at_scale(__doc__, rows, RUNS, "runs of each figure and its baseline", default_size=200_000)
