"""What the ``phases`` view costs to build, against the full view of the history it stands for.

Build time of the ``phases`` view on the benchmark corpus (a phase handoff about every 50 entries), warm;
the baseline is the ``full`` view of the same tape. It reads one entry per earlier phase anchor, so it
grows with the number of phases, not with the tape; the ``LAST_ANCHOR`` view's time is shown beside it.
What the view *sends*, in tokens, against the full history is in ``compression.py``, on a session whose
phases were closed by summarizing handoffs.

    python benchmarks/phases.py [--sizes 10000,100000]
"""

from __future__ import annotations

import argparse

import corpus
from _common import median_time, ms, print_table

from bub_nb import open_tape
from bub_nb.context import LAST_ANCHOR, PHASES


def build_rows(sizes: list[int]) -> list[list[str]]:
    rows = []
    for size in sizes:
        tape = open_tape(corpus.cached_tape(size))
        tape.view()  # the index is loaded (or built) once
        phases = median_time(lambda: tape.view(PHASES), runs=5)  # noqa: B023
        full = median_time(lambda: tape.view(None), runs=3, warmup=1)  # noqa: B023
        last = median_time(lambda: tape.view(LAST_ANCHOR), runs=5)  # noqa: B023
        count = len(tape.view(PHASES).messages)
        figure = f"{size:,}: phases view warm ({count:,} msgs; last-anchor view {ms(last)})"
        rows.append([figure, ms(phases), f"{ms(full)} (full view)", f"{phases / full:.2f}x", ""])
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000", help="corpus tape sizes for the build time")
    args = parser.parse_args(argv)
    rows = build_rows([int(size) for size in args.sizes.split(",") if size])
    print_table(["figure", "bub_nb", "baseline", "ratio", "target"], rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
