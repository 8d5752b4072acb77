"""The analyst's helpers on a home of many tapes, each beside the same question asked of the raw lines in DuckDB.

- a home of ``--tapes`` tapes (default 200) written as Bub and bub_nb write them: tool calls that fail in each
  writer's shape, forks, resets, retractions, agents, torn lines, bad bytes and odd dates;
- ``read_tapes()`` beside loading the lines into DuckDB and deriving the oracle's tables, then each helper
  (``kinds`` counts, phase instances, ``runs()``, ``usage(by="phase")``, ``tool_calls()``, retracted rows)
  beside the oracle's query for the same numbers, with whether the two agree;
- every ``plot.*`` of the whole home (target < 2 s each);
- with ``--postgres`` (the server binaries installed), a teacher's read of a class of 200 students x 500
  entries (100k rows) under row-level security, whole and lean, beside reading it tape by tape.

    python benchmarks/frames.py [--tapes 200] [--steps 60] [--postgres]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from _common import median_time, print_table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the oracle and the home writer

from harness.duckdb_oracle import Oracle
from harness.homes import STYLES, write_home

from bub_nb.tape import read_tapes

TOOLS = ("bash", "web_fetch", "fs.read")
PHASES = ("session/start", "phase/plan", "phase/build", "auto_handoff/context_overflow", "memory/open")
OUTCOMES = ("ok", "ok", "ok", "bub_failed", "bub_nb_failed", "error_key", "unanswered")


def _step(pick: random.Random) -> tuple[Any, ...]:
    roll = pick.random()
    if roll < 0.08:
        return ("anchor", pick.choice(PHASES))
    if roll < 0.15:
        return ("user", "a question")
    if roll < 0.17:
        return ("retract", pick.randrange(40), pick.randrange(4))
    if roll < 0.175:
        return ("bad_byte",)
    calls = [(pick.choice(TOOLS), pick.choice(OUTCOMES)) for _ in range(pick.randrange(4))]
    return ("turn", pick.choice(STYLES), calls, (pick.randrange(20_000), pick.randrange(900)))


def build_home(folder: Path, tapes: int, steps: int, seed: int = 7) -> None:
    pick = random.Random(seed)
    specs = [
        {
            "steps": [("anchor", "session/start"), *(_step(pick) for _ in range(steps))],
            "bub": pick.random() < 0.5,
            "dates": pick.choice(["plain", "plain", "zulu", "naive", "offset", "timestamp"]),
            "agent": pick.random() < 0.1,
            "reset": pick.random() < 0.1,
            "torn": pick.random() < 0.05,
            "fork": pick.randrange(1000) if pick.random() < 0.1 else None,
        }
        for _ in range(tapes)
    ]
    write_home(folder, specs)


def _counts(frame: Any) -> dict[tuple[str, bool, str], int]:
    counts = frame.groupby(["tape_name", "kind"], observed=True).size()
    return {(tape, False, str(kind)): int(n) for (tape, kind), n in counts.items()}


def helper_rows(home: Path, runs: int) -> list[list[Any]]:
    """Each question: the helper's time, the oracle's, the ratio, and whether their numbers agree."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frame = read_tapes(home)
    oracle = Oracle(home)
    questions: list[tuple[str, Any, Any, Any]] = [
        ("entries per tape and kind", lambda: _counts(frame), oracle.kinds, None),
        ("phase instances", lambda: frame.groupby(["tape_name", "phase_id"], dropna=False).size(), oracle.phases,
         lambda mine, theirs: len(mine) == len(theirs)),
        ("runs()", lambda: frame.tape.runs(), oracle.turns, lambda mine, theirs: len(mine) == sum(theirs.values())),
        ("usage(by='phase')", lambda: frame.tape.usage(by="phase"), oracle.tokens_per_phase,
         lambda mine, theirs: int(mine["tokens_in"].sum()) == sum(v[1] for v in theirs.values())),
        ("tool_calls()", lambda: frame.tape.tool_calls(), oracle.tool_calls,
         lambda mine, theirs: (len(mine), int((mine["ok"] == False).sum()))  # noqa: E712
         == tuple(map(sum, zip(*theirs.values(), strict=True)))),
        ("retracted rows", lambda: set(frame.loc[frame["retracted"], "id"].items()), oracle.retracted,
         lambda mine, theirs: len(mine) == len(theirs)),
    ]  # fmt: skip

    def read() -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            read_tapes(home)

    ours, theirs = median_time(read, runs=runs, warmup=1), median_time(lambda: Oracle(home), runs=runs, warmup=1)
    table = [[f"read_tapes() / DuckDB load + tables, {len(frame):,} rows", ours, theirs, "", ""]]
    for label, helper, question, same in questions:
        mine, answer = helper(), question()
        agree = (mine == answer) if same is None else same(mine, answer)
        table.append([label, median_time(helper, runs=runs, warmup=1), median_time(question, runs=runs, warmup=1),
                      "", "yes" if agree else "NO"])  # fmt: skip
    return [
        [label, f"{a * 1000:.0f} ms", f"{b * 1000:.0f} ms", f"{a / b:.2f}x", agree] for label, a, b, _, agree in table
    ]


def plot_rows(home: Path) -> list[list[Any]]:
    """Each figure of the whole home, in seconds, against the 2 s target (the first draw warms matplotlib)."""
    import matplotlib

    matplotlib.use("Agg")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frame = read_tapes(home)
    plots = {
        "plot.tokens()": lambda: frame.tape.plot.tokens(),
        "plot.tokens(by='phase')": lambda: frame.tape.plot.tokens(by="phase"),
        "plot.timeline()": lambda: frame.tape.plot.timeline(),
        "plot.tool_failures()": lambda: frame.tape.plot.tool_failures(),
    }
    rows = []
    for label, draw in plots.items():
        seconds = median_time(draw, runs=3, warmup=1)
        size = draw().get_size_inches()
        rows.append(
            [label, f"{seconds:.2f} s", f"{size[0]:.0f} x {size[1]:.1f} in", "< 2 s", "yes" if seconds < 2 else "NO"]
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tapes", type=int, default=200)
    parser.add_argument("--steps", type=int, default=60, help="steps (turns, anchors, ...) per tape")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--postgres", action="store_true", help="a teacher's read of 100k rows on PostgreSQL too")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bub_nb-frames-") as folder:
        home = Path(folder)
        build_home(home, args.tapes, args.steps)
        print(f"  home of {args.tapes} tapes built in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        print_table(["question", "frame", "DuckDB oracle", "ratio", "agree"], helper_rows(home, args.runs))
        print()
        print_table(["figure, whole home", "time", "size", "target", "met"], plot_rows(home))
    if args.postgres:
        import postgres

        from bub_nb.testing.postgres import PostgresServer

        with PostgresServer() as server:
            table = postgres.class_rows(server)
        print()
        print_table(["figure (PostgreSQL)", "postgres", "baseline", "ratio", "target"], table)
    print(f"\nin {time.perf_counter() - started:.0f} s; median of warm runs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
