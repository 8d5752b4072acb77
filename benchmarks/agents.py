"""Several agents: who holds the conversation, read from the agents' tapes before every turn, against the view
that turn builds anyway.

    python benchmarks/agents.py --handoffs 10 100 500

A ``%%bub`` cell of a notebook with agents first reads every receiver's handoff anchors (``Team.holder()``, a
fresh team as each cell makes one); the baseline is the holder's own next view, built from its tape's index.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from _common import median_time, ms, print_table

from bub_nb.agent.team import Team
from bub_nb.tape import FileTapeStore, Tape

TARGET_MS = 25.0  # the holder read per turn, at 100 handoffs


def _team(folder: Path, handoffs: int) -> Team:
    notebook = Tape("nb", FileTapeStore(folder))
    team = Team(notebook, ["analyst", "reviewer"])
    for number in range(handoffs):
        sender, receiver = ("analyst", "reviewer") if number % 2 == 0 else ("reviewer", "analyst")
        tape = team.tape_of(sender)
        tape.append_message({"role": "user", "content": f"question {number}"})
        tape.append_message({"role": "assistant", "content": f"answer {number}"})
        team.handoff(f"h{number}", sender=sender, to=receiver, summary=f"answered [#{tape.last_id}]")
    return team


def rows(handoffs: tuple[int, ...] = (10, 100)) -> list[list[str]]:
    found = []
    for count in handoffs:
        with tempfile.TemporaryDirectory() as folder:
            team = _team(Path(folder), count)
            holder = team.holder() or "main"
            notebook, holders = team.tape, team.tape_of(holder)
            read = median_time(lambda: Team(notebook, ["analyst", "reviewer"]).holder(), runs=9)  # noqa: B023
            view = median_time(lambda: holders.view(), runs=9)  # noqa: B023
            target = f"≤ {TARGET_MS:g} ms {'✓' if read * 1000 <= TARGET_MS else '✗'}" if count == 100 else ""
            found.append(
                [
                    f"who holds it, after {count} handoffs",
                    ms(read),
                    f"{ms(view)} (holder's view)",
                    f"{read / view:.0f}x",
                    target,
                ]
            )
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--handoffs", type=int, nargs="+", default=[10, 100], help="handoffs written first")
    args = parser.parse_args(argv)
    print_table(["figure", "bub_nb", "baseline", "ratio", "target"], rows(tuple(args.handoffs)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
