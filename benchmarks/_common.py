"""Shared pieces of the benchmarks: a cache folder, timers that resist noise, and a plain table."""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


def cache_dir(name: str) -> Path:
    """A folder under the system temp dir that survives between runs, so built inputs are reused."""
    path = Path(tempfile.gettempdir()) / "bub_nb-benchmarks" / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def timed(call: Callable[[], Any]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def median_time(call: Callable[[], Any], *, runs: int = 15, warmup: int = 2) -> float:
    """Median seconds of ``runs`` calls after ``warmup`` calls: the middle resists a busy machine."""
    for _ in range(warmup):
        call()
    return statistics.median(timed(call) for _ in range(runs))


def best_of_pairs(first: Callable[[], Any], second: Callable[[], Any], *, runs: int) -> tuple[float, float]:
    """The best time of each of two calls, run alternately so both see the same machine load."""
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(runs):
        times[0].append(timed(first))
        times[1].append(timed(second))
    return min(times[0]), min(times[1])


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    cells = [[str(h) for h in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    for number, row in enumerate(cells):
        print(
            "  ".join(
                cell.rjust(width) if i else cell.ljust(width)
                for i, (cell, width) in enumerate(zip(row, widths, strict=True))
            )
        )
        if number == 0:
            print("  ".join("-" * width for width in widths))


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def load() -> str:
    """The machine's load average, printed before and after a run: the figures of a busy machine say so."""
    return "load average " + " / ".join(f"{value:.2f}" for value in os.getloadavg()) + " (1 / 5 / 15 min)"


def main_at_scale(
    doc: str,
    rows: Callable[[int, int], Sequence[Sequence[Any]]],
    runs: int,
    runs_help: str,
    default_size: int = 1_000_000,
) -> None:
    """A script's ``main`` for figures over one tape of ``--size`` entries, each measured ``--runs`` times: the
    load before and after, then the table of ``rows(size, runs)``."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--size", type=int, default=default_size, help="entries in the tape")
    parser.add_argument("--runs", type=int, default=runs, help=runs_help)
    args = parser.parse_args()
    print(f"before: {load()}")
    table = rows(args.size, args.runs)
    print(f"after: {load()}")
    print_table(["figure", "bub_nb", "baseline", "ratio", "target"], table)
