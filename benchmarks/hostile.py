"""Readers on a hostile tape: what each reader takes on a tape a model filled with megabyte replies and huge citations.

    python benchmarks/hostile.py [--entries 300] [--runs 3]

The tape holds ``--entries`` ordinary entries, every tenth a reply of a megabyte, and a handoff whose summary
cites ``[#1-#99999999999999]``. Each reader (the anchors, every view, the export, the frame) is timed against
reading the tape's entries once, on the same tape in the same run; the target is a ratio, so a busy machine
moves both sides alike. ``tests/agent/test_hostile_model.py`` checks that every reader ends within bounded
memory on tapes hypothesis draws; how long they take is measured here.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import load, median_time, ms, print_table

from bub_nb.context import diff_views
from bub_nb.tape import FileTapeStore, Tape
from bub_nb.tape.events import handoff_entries
from bub_nb.tape.reports.transcript import transcript_markdown

TARGET_RATIO = 50.0  # any reader against one read of the entries
MEGABYTE = "x" * 2**20


def hostile_tape(folder: Path, entries: int) -> Tape:
    tape = Tape("hostile", FileTapeStore(folder))
    tape.ensure_bootstrap_anchor()
    for number in range(entries):
        content = MEGABYTE if number % 10 == 0 else f"reply {number} citing [#1-#{10**14}]"
        tape.append_message({"role": "user" if number % 2 else "assistant", "content": content})
    summary = "Everything [#1-#99999999999999]."
    tape.extend(handoff_entries("phase/all", {"summary": summary, "next_steps": "Then [#5-#99999999999999]."}))
    return tape


def rows(entries: int, runs: int) -> list[list[str]]:
    with tempfile.TemporaryDirectory() as folder:
        tape = hostile_tape(Path(folder), entries)
        baseline = median_time(tape.read, runs=runs, warmup=1)
        readers: dict[str, Callable[[], Any]] = {
            "tape.anchors() and their tables": lambda: [a.to_markdown() for a in tape.anchors(None)],
            **{f"view {mode}": (lambda mode=mode: tape.view(mode)) for mode in ("last", "full", "phases")},
            "diff_views(full, last)": lambda: diff_views(tape.view("full"), tape.view("last")),
            "transcript export": lambda: transcript_markdown(tape),
            "to_frame": tape.to_frame,
        }
        table = []
        for label, reader in readers.items():
            seconds = median_time(reader, runs=runs, warmup=1)
            ratio = seconds / baseline
            table.append(
                [
                    label,
                    ms(seconds),
                    f"{ms(baseline)} (read the entries)",
                    f"{ratio:.1f}x",
                    f"< {TARGET_RATIO:g}x {'✓' if ratio < TARGET_RATIO else '✗'}",
                ]
            )
        return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=300, help="entries on the tape, every tenth a megabyte")
    parser.add_argument("--runs", type=int, default=3, help="timed runs of each reader (the median is shown)")
    args = parser.parse_args()
    print(f"before: {load()}")
    table = rows(args.entries, args.runs)
    print(f"after: {load()}")
    print_table(["figure", "bub_nb", "baseline", "ratio", "target"], table)


if __name__ == "__main__":
    main()
