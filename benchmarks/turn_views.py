"""What remembering each turn's view costs, and what rebuilding one costs, on big tapes.

- ``view_of_turn(-1)`` (the last turn's request, rebuilt from its run event), warm; the baseline is
  ``tape.view()``, the view the next turn would build, in the same run on the same tape. A ratio near 1
  means looking back at a turn costs what building a turn's context costs.
- ``view_of_turn`` of the oldest measured turn, ``--turns`` turns back.
- The ``view`` a run event carries, in bytes, against the whole run payload; and the ranges recorded
  against the entry ids they stand for, over all measured turns.

Each tape is a copy of ``corpus.py``'s tape of that size; ``--turns`` offline turns (no model is called)
are appended after a fresh anchor, with a window view every third turn so ranges have gaps.

    python benchmarks/turn_views.py [--sizes 10000,100000] [--turns 30]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
from pathlib import Path

import corpus
import orjson
from _common import median_time, ms, print_table

from bub_nb.agent import Agent
from bub_nb.context import window
from bub_nb.tape import FileTapeStore, Tape
from bub_nb.tape.events import RUN


def prepared(directory: Path, entries: int, turns: int) -> Tape:
    shutil.copyfile(corpus.cached_tape(entries), directory / f"bench-{entries}.jsonl")
    tape = Tape(f"bench-{entries}", FileTapeStore(directory))
    tape.handoff("bench/turn-views", {"turns": turns})
    last = Agent(tape, "offline")
    windowed = Agent(tape, "offline", context=window(7))
    for number in range(turns):
        (windowed if number % 3 == 2 else last).run(f"Question {number}: what did the last turn see?")
    return tape


def rows(entries: int, turns: int) -> list[list[str]]:
    with tempfile.TemporaryDirectory() as folder:
        tape = prepared(Path(folder), entries, turns)
        tape.view()  # the index is loaded once, as when a kernel first opens the tape
        baseline = median_time(tape.view, runs=30)
        last = median_time(lambda: tape.view_of_turn(-1), runs=30)
        oldest = median_time(lambda: tape.view_of_turn(-turns), runs=30)
        runs = [entry for entry in tape.read(tape.find_anchor("bench/turn-views").id) if entry.name == RUN]
        view_bytes = [len(orjson.dumps(entry.payload["data"]["view"])) for entry in runs]
        line_bytes = [len(orjson.dumps(entry.payload)) for entry in runs]
        ids = [len(tape.view_of_turn(entry.id).entry_ids) for entry in runs]
        ranges = [len(entry.payload["data"]["view"]["entries"]) for entry in runs]
    base = f"{ms(baseline)} (tape.view())"
    return [
        [f"{entries:,}: view_of_turn(-1)", ms(last), base, f"{last / baseline:.2f}x"],
        [f"{entries:,}: view_of_turn(-{turns})", ms(oldest), base, f"{oldest / baseline:.2f}x"],
        [
            f"{entries:,}: run event's view",
            f"{statistics.median(view_bytes):.0f} B",
            f"{statistics.median(line_bytes):.0f} B (run payload)",
            f"{statistics.median(v / t for v, t in zip(view_bytes, line_bytes, strict=True)):.2f}x",
        ],
        [
            f"{entries:,}: ranges recorded",
            f"{sum(ranges)} ranges",
            f"{sum(ids)} entry ids",
            f"{sum(ranges) / sum(ids):.2f}x",
        ],
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--turns", type=int, default=30)
    args = parser.parse_args()
    table = [row for size in args.sizes.split(",") for row in rows(int(size), args.turns)]
    print_table(["measure", "value", "baseline (same run)", "ratio"], table)


if __name__ == "__main__":
    main()
