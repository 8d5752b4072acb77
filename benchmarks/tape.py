"""Tape benchmarks: appends, anchor slicing warm and in a fresh process, and DataFrames, by tape size.

Run ``python benchmarks/tape.py`` (or ``--sizes 10000,100000`` for a quick look). The tapes come from
``corpus.py`` and are cached under the temp folder, so reruns start at once.
Every figure comes with a baseline measured in the same run and their ratio:

- appends: the same lines written with a bare ``O_APPEND`` write each (no lock, no index, no checks);
- slicing and anchors: decoding every line of the file, which is what a reader without an index
  has to do (in this process when warm, in a fresh process otherwise);
- ``to_frame()``: ``pandas.read_json(path, lines=True)`` on the same file.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import corpus
import orjson
from _common import best_of_pairs, median_time, ms, print_table, timed

from bub_nb.tape import FileTapeStore, TapeEntry, open_tape

TARGETS = {"from_last_anchor": (0.010, 0.050)}  # seconds, warm and fresh, on the largest tape


def cached_tape(size: int) -> tuple[Path, float | None]:
    """The corpus tape of ``size`` entries; with the time of the first open, when that open built its index."""
    path = corpus.cached_tape(size)
    first_open = None
    if not Path(str(path) + ".idx").exists():
        first_open = timed(lambda: open_tape(path).from_last_anchor())
    return path, first_open


def full_read(path: Path) -> list[Any]:
    """What a reader without an index does: decode every line."""
    with path.open("rb") as handle:
        return [orjson.loads(line) for line in handle if line.strip()]


FRESH = """
import json, sys, time
import orjson
from bub_nb.tape import open_tape
path, what = sys.argv[1], sys.argv[2]
start = time.perf_counter()
if what == "from_last_anchor":
    open_tape(path).from_last_anchor()
elif what == "anchors":
    open_tape(path).anchors()
else:
    with open(path, "rb") as handle:
        [orjson.loads(line) for line in handle if line.strip()]
print(json.dumps(time.perf_counter() - start))
"""


def fresh_process(path: Path, what: str, runs: int) -> float:
    """Median seconds of ``what`` in new interpreters, timed after their imports."""
    times = []
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-c", FRESH, str(path), what], capture_output=True, text=True, check=True
        )
        times.append(json.loads(done.stdout))
    return sorted(times)[len(times) // 2]


def append_rows(count: int) -> list[list[Any]]:
    folder = Path(tempfile.mkdtemp(prefix="bub_nb-append-"))
    tape = open_tape("appends", store=FileTapeStore(folder))
    message = {"role": "user", "content": "a typical question about the code " * 3}
    ours = timed(lambda: [tape.append_message(message, run_id="r") for _ in range(count)])
    batch = timed(lambda: [tape.extend([TapeEntry.message(message)] * 100) for _ in range(count // 100)])
    line = TapeEntry(1, "message", message, {"run_id": "r"}).to_line()
    raw_path = folder / "raw.jsonl"

    def raw() -> None:
        for _ in range(count):
            fd = os.open(raw_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            os.write(fd, line)
            os.close(fd)

    bare = timed(raw)
    return [
        ["append, one entry per call", f"{count / ours:,.0f} /s", f"{count / bare:,.0f} /s", f"{ours / bare:.1f}x", ""],
        ["append, 100 per call", f"{count / batch:,.0f} /s", f"{count / bare:,.0f} /s", f"{batch / bare:.2f}x", ""],
    ]


def size_rows(size: int, fresh_runs: int) -> list[list[Any]]:
    path, first_open = cached_tape(size)
    tape = open_tape(path)
    big = size >= 1_000_000
    full = timed(lambda: full_read(path)) if big else median_time(lambda: full_read(path), runs=3, warmup=1)
    fresh_full = fresh_process(path, "full", 1 if big else 3)
    label = f"{size:,}"
    rows = []
    if first_open is not None:
        rows.append(
            [f"{label}: first open (builds the index)", ms(first_open), ms(full), f"{first_open / full:.2f}x", ""]
        )
    warm, cold = TARGETS["from_last_anchor"]
    for what, call in (("from_last_anchor", tape.from_last_anchor), ("anchors", tape.anchors)):
        hot = median_time(call, runs=50)
        fresh = fresh_process(path, what, fresh_runs)
        goal = what == "from_last_anchor" and big
        rows.append(
            [f"{label}: {what}() warm", ms(hot), ms(full), f"{hot / full:.5f}x", f"< {ms(warm)}" if goal else ""]
        )
        rows.append(
            [
                f"{label}: {what}() fresh process",
                ms(fresh),
                ms(fresh_full),
                f"{fresh / fresh_full:.4f}x",
                f"< {ms(cold)}" if goal else "",
            ]
        )
    import pandas as pd

    ours, pandas_time = best_of_pairs(tape.to_frame, lambda: pd.read_json(path, lines=True), runs=2 if big else 7)
    rows.append(
        [f"{label}: to_frame() vs pandas.read_json", ms(ours), ms(pandas_time), f"{ours / pandas_time:.2f}x", "<= 1.0x"]
    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000", help="comma-separated tape sizes (entries)")
    parser.add_argument("--appends", type=int, default=3000, help="entries appended through the API")
    parser.add_argument("--fresh-runs", type=int, default=5, help="fresh processes per latency figure")
    args = parser.parse_args()
    rows = append_rows(args.appends)
    for size in (int(s.replace("_", "")) for s in args.sizes.split(",") if s):
        rows.extend(size_rows(size, args.fresh_runs))
    print_table(["figure", "bub_nb", "baseline", "ratio", "target"], rows)


if __name__ == "__main__":
    main()
