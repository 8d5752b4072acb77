"""Every benchmark in one table: each figure beside a baseline measured in the same run, and their ratio.

    python benchmarks/run.py            # tapes of 10k, 100k and 1M entries (builds them once, ~2 min)
    python benchmarks/run.py --quick    # 10k and 100k only
    python benchmarks/run.py --postgres # also the PostgreSQL store beside the file store (postgres.py)

Sections: appends, slicing, anchors and DataFrames (tape.py); views, search and memory (views.py);
whole-tape reads at scale: first open, frames, read_tapes, search, frame memory (scale.py; the ``bench``
extra adds pyarrow and polars beside to_frame); the Arrow path: to_arrow() against polars, pyarrow and
DuckDB's JSON readers, read_tapes(as_="arrow"), runs() and tool_calls() beside to_frame() (arrow.py);
turn overhead against an instant local endpoint (turn.py); tool calls on their worker thread
(tool_calls.py); looking at the notebook (kernel_tools.py); start-up (startup.py); tokens a long session
sends with summaries that cite, against the full history (compression.py); a 10k-entry tape exported to
OTLP and to ATIF, in spans per second (export.py, with the ``otel`` extra); who holds the conversation among
several agents, read before each turn (agents.py). Each script also runs on its
own with more options.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import agents
import arrow
import compression
import export
import kernel_tools
import postgres
import scale
import startup
import tape
import tool_calls
import turn
import views
from _common import print_table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tapes of 10k and 100k entries only")
    parser.add_argument("--turns", type=int, default=40, help="measured turns per size and mode")
    parser.add_argument("--postgres", action="store_true", help="add the PostgreSQL store's figures (starts a server)")
    args = parser.parse_args(argv)
    sizes = [10_000, 100_000] if args.quick else [10_000, 100_000, 1_000_000]
    turn_sizes = [1_000, 100_000] if args.quick else [1_000, 1_000_000]
    started = time.perf_counter()
    rows = tape.append_rows(3000)
    for size in sizes:
        rows += tape.size_rows(size, fresh_runs=5)
    rows += views.view_rows(sizes) + views.search_rows(sizes) + views.memory_rows(max(sizes))
    rows += scale.rows(max(sizes))
    rows += arrow.rows(max(sizes))
    cache = Path(tempfile.gettempdir()) / "bub_nb-bench"
    rows += turn.figure_rows(turn.measure_sizes(turn_sizes, args.turns, cache))
    rows += tool_calls.rows()
    rows += kernel_tools.rows()
    rows += startup.rows()
    rows += compression.rows()
    rows += export.rows()
    rows += agents.rows()
    if args.postgres:
        rows += postgres.rows(size=max(sizes))
    print_table(["figure", "bub_nb", "baseline", "ratio", "target"], rows)
    print(f"\n{len(rows)} figures in {time.perf_counter() - started:.0f} s; machine: {_machine()}")
    return 0


def _machine() -> str:
    import os
    import platform

    return f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cores"


if __name__ == "__main__":
    raise SystemExit(main())
