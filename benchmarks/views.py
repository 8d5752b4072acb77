"""Views, search and memory on big tapes: what a turn reads, what a search scans, what opening costs.

- A ``LAST_ANCHOR`` view, warm, by tape size; the baseline is the same view on the smallest tape,
  so a ratio near 1 means view building stays flat as the tape grows.
- ``search()`` for a word that only the oldest entries hold (a full scan, newest first); the
  baseline is decoding every line of the file.
- Extra resident memory to open the biggest tape and build a view, in a fresh process; the
  baseline is the process after ``import bub_nb``.

    python benchmarks/views.py [--sizes 10000,100000,1000000]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import corpus
from _common import median_time, ms, print_table, timed
from tape import full_read

from bub_nb import open_tape

VIEW_TARGET_S = 0.010
MEMORY_TARGET_MB = 100.0

_MEMORY = """
import json, resource, sys
def rss_mb():
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * resource.getpagesize() / 2**20
import bub_nb
before = rss_mb()
tape = bub_nb.open_tape(sys.argv[1])
view = tape.view()
after = rss_mb()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"before": before, "after": after, "peak": peak, "messages": len(view.messages)}))
"""


def view_rows(sizes: list[int]) -> list[list[str]]:
    times = {}
    for size in sizes:
        tape = open_tape(corpus.cached_tape(size))
        tape.view()  # the index is loaded (or built) once, as when a kernel first opens the tape
        times[size] = median_time(tape.view, runs=50)
    smallest = min(sizes)
    return [
        [
            f"{size:,}: LAST_ANCHOR view warm",
            ms(seconds),
            f"{ms(times[smallest])} (at {smallest:,})",
            f"{seconds / times[smallest]:.2f}x",
            f"< {ms(VIEW_TARGET_S)}" if size >= 1_000_000 else "",
        ]
        for size, seconds in times.items()
    ]


def _search_row(size: int) -> list[str]:
    path = corpus.cached_tape(size)
    tape = open_tape(path)

    def search() -> object:
        return tape.search("Question 1: ", limit=1)  # only the first turns say it: a scan of the whole tape

    found = timed(search) if size >= 1_000_000 else median_time(search, runs=3, warmup=0)
    decode = timed(lambda: full_read(path))
    ratio = f"{found / decode:.2f}x"
    return [f"{size:,}: search() full scan", ms(found), f"{ms(decode)} (decode every line)", ratio, ""]


def search_rows(sizes: list[int]) -> list[list[str]]:
    return [_search_row(size) for size in sizes]


def memory_rows(size: int) -> list[list[str]]:
    path = corpus.cached_tape(size)
    open_tape(path).view()  # the index exists, as it does after the first open
    done = subprocess.run([sys.executable, "-c", _MEMORY, str(path)], capture_output=True, text=True, check=True)
    figures = json.loads(done.stdout)
    extra = figures["after"] - figures["before"]
    return [
        [
            f"{size:,}: extra memory to open + view",
            f"{extra:.1f} MB",
            f"{figures['before']:.1f} MB (after import bub_nb)",
            f"{figures['after'] / figures['before']:.2f}x",
            f"< {MEMORY_TARGET_MB:g} MB",
        ]
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    sizes = [int(text) for text in parser.parse_args().sizes.split(",")]
    rows = view_rows(sizes) + search_rows(sizes) + memory_rows(max(sizes))
    print_table(["figure", "bub_nb", "baseline", "ratio", "target"], rows)


if __name__ == "__main__":
    main()
