"""The instruments' cost: replaying a session, the budget per phase, and the budget check before a turn.

- ``replay`` of a session of N offline turns; the baseline is running the same N prompts as new turns
  on a fresh tape, so the ratio is what the fork, the copies between turns and the rows add.
- ``df.tape.usage(by="phase")`` on a corpus tape's frame; the baseline is ``df.tape.summary()`` on the
  same frame (another per-phase group-by), so the ratio says what reading the run events costs.
- A turn's checks with a ``budget`` (a view and the system prompt estimated before writing); the
  baseline is one whole offline turn on the same tape, so the ratio is the share of a turn it adds.

    python benchmarks/instruments.py [--turns 20] [--size 100000]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import corpus
from _common import best_of_pairs, median_time, ms, print_table

import bub_nb
from bub_nb.tape import FileTapeStore, Tape

PROMPTS = ("What do you see?", "Where does the view start?", "remember: short answers", "And now?")


def session(folder: Path, name: str, turns: int) -> Tape:
    tape = Tape(name, FileTapeStore(folder))
    agent = bub_nb.Agent(tape, "offline")
    for number in range(turns):
        if number and number % 5 == 0:
            tape.handoff(f"phase/{number}", {"summary": f"turns up to {number}"})
        agent.run(PROMPTS[number % len(PROMPTS)])
    return tape


def replay_row(turns: int) -> list[str]:
    folder = Path(tempfile.mkdtemp(prefix="bub_nb-instruments-"))
    source = session(folder, "source", turns)
    counter = iter(range(1_000_000))

    def replayed() -> None:
        bub_nb.replay(source, model="offline", into=f"replay-{next(counter)}")

    def fresh() -> None:
        session(folder, f"fresh-{next(counter)}", turns)

    replayed()
    fresh()
    replay_s, fresh_s = best_of_pairs(replayed, fresh, runs=7)  # alternated, so both see the same load
    return [f"replay of {turns} offline turns", ms(replay_s), ms(fresh_s), f"{replay_s / fresh_s:.2f}x"]


def usage_row(size: int) -> list[str]:
    frame = bub_nb.open_tape(corpus.cached_tape(size)).to_frame()
    usage_s = median_time(lambda: frame.tape.usage(by="phase"), runs=7)
    summary_s = median_time(lambda: frame.tape.summary(), runs=7)
    return [f"usage(by='phase'), {size:,} entries", ms(usage_s), ms(summary_s), f"{usage_s / summary_s:.2f}x"]


def budget_row() -> list[str]:
    tape = session(Path(tempfile.mkdtemp(prefix="bub_nb-instruments-")), "budget", 12)
    budgeted = bub_nb.Agent(tape, "offline", budget=1_000_000)
    plain = bub_nb.Agent(tape, "offline")
    check_s = median_time(lambda: budgeted.check("One more?"), runs=50)
    turn_s = median_time(lambda: plain.run("One more?"), runs=15)
    return ["a turn's checks with a budget", ms(check_s), f"{ms(turn_s)} (a turn)", f"{check_s / turn_s:.2f}x"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--size", type=int, default=100_000)
    args = parser.parse_args()
    rows = [replay_row(args.turns), usage_row(args.size), budget_row()]
    print_table(["measure", "time", "baseline", "ratio"], rows)


if __name__ == "__main__":
    main()
