"""The ``phases`` view: what it sends against the full history it replaces, and what it costs to build.

- Tokens on a session of 200 turns by the offline model, closed into phases of 20 turns by handoffs whose
  state holds a cited summary: the ``phases`` view against the ``full`` view of the same tape (the
  compression ratio), with the ``last`` view beside it.
- Build time of the ``phases`` view on the benchmark corpus (a phase handoff about every 50 entries),
  warm; the baseline is the ``full`` view of the same tape, the history it stands for. It reads one
  entry per earlier phase anchor, so it grows with the number of phases, not with the tape; the
  ``LAST_ANCHOR`` view's time is shown beside it.

    python benchmarks/phases.py [--turns 200] [--phase 20] [--sizes 10000,100000]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import corpus
from _common import median_time, ms, print_table

from bub_nb import Agent, Tape, open_tape
from bub_nb.context import LAST_ANCHOR, PHASES
from bub_nb.tape.citations import cited_ids, format_citation


def phase_summary(tape: Tape) -> dict[str, object]:
    """A cited summary of the phase since the last anchor, as a summarising handoff's state is shaped:
    the first and last question and the last answer, each citing its entry."""
    last = tape.last_anchor()
    first = (last.id if last else 0) + 1
    messages = [e for e in tape.read(first) if e.kind == "message"]
    asked = [e for e in messages if e.payload.get("role") == "user"]
    answered = [e for e in messages if e.payload.get("role") == "assistant"]
    lines = [
        f"The phase opened with: {asked[0].payload['content'][:80]} {format_citation(asked[0].id)}.",
        f"It ended asking: {asked[-1].payload['content'][:80]} {format_citation(asked[-1].id)}.",
        f"The last answer began: {answered[-1].payload['content'][:80]} {format_citation(answered[-1].id)}.",
    ]
    summary = "\n".join(lines)
    return {
        "summary": summary,
        "next_steps": "",
        "sources": cited_ids(summary),
        "range": [first, tape.last_id],
        "summarized_by": "benchmark (extractive)",
        "uncited": [],
        "removed_citations": 0,
    }


def session(home: Path, turns: int, phase: int) -> Tape:
    tape = open_tape("phases-bench", home=home)
    agent = Agent(tape, model="offline")
    for number in range(1, turns + 1):
        agent.run(f"Turn {number}: what does column {number % 7} of sales.csv tell us about region {number % 5}?")
        if number % phase == 0 and number < turns:
            tape.handoff(f"phase/{number // phase}", phase_summary(tape))
    return tape


def token_rows(turns: int, phase: int) -> list[list[str]]:
    with tempfile.TemporaryDirectory() as home:
        tape = session(Path(home), turns, phase)
        full, phases, last = tape.view("full"), tape.view("phases"), tape.view("last")
    base = f"{full.total_tokens:,} tok ({len(full.messages)} msgs)"
    return [
        [
            f"{turns} turns: {label} view tokens vs full history",
            f"{view.total_tokens:,} tok ({len(view.messages)} msgs)",
            base,
            f"{view.total_tokens / full.total_tokens:.3f}x",
            "",
        ]
        for label, view in (("phases", phases), ("last", last))
    ]


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
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--phase", type=int, default=20, help="turns per phase")
    parser.add_argument("--sizes", default="10000,100000", help="corpus tape sizes for the build time")
    args = parser.parse_args(argv)
    rows = token_rows(args.turns, args.phase) + build_rows([int(s) for s in args.sizes.split(",") if s])
    print_table(["figure", "bub_nb", "baseline", "ratio", "target"], rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
