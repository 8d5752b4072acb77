"""Several agents: who holds the conversation, and a ``%%bub`` turn, after many handoffs against after none.

    python benchmarks/agents.py --handoffs 10 100 1000

A notebook's session keeps its team, so a turn finds the holder by reading only what the agents' tapes gained since
the last cell. The figures: finding the holder that way after N handoffs (another writer appended since), against
building the holder's next view from its tape's index; the same holder found by a fold from scratch over every
tape, as a kernel that starts does once; and a ``%%bub`` turn in a real IPython shell (the offline model) after N
handoffs, against the same turn in a notebook whose agents never handed anything on.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from _common import median_time, ms, print_table

from bub_nb.agent.team import Team
from bub_nb.tape import FileTapeStore, Tape
from bub_nb.tape.locations import current_notebook

HOLDER_TARGET_MS = 1.0  # the holder, kept by the session, after 1,000 handoffs
TURN_TARGET = 1.5  # a turn after 1,000 handoffs, against a turn after none
_AGENTS = ("analyst", "reviewer")


def _team(notebook: Tape, handoffs: int) -> Team:
    team = Team(notebook, list(_AGENTS))
    for number in range(handoffs):
        sender, receiver = _AGENTS if number % 2 == 0 else _AGENTS[::-1]
        tape = team.tape_of(sender)
        tape.append_message({"role": "user", "content": f"question {number}"})
        tape.append_message({"role": "assistant", "content": f"answer {number}"})
        team.handoff(f"h{number}", sender=sender, to=receiver, summary=f"answered [#{tape.last_id}]")
    return team


@contextlib.contextmanager
def _notebook_folder() -> Iterator[Path]:
    """A folder to run a notebook in, with its own Bub home: the tapes a shell started there writes."""
    saved = {key: os.environ.get(key) for key in ("BUB_HOME", "BUB_MODEL", "JPY_SESSION_NAME")}
    here = Path.cwd()
    with tempfile.TemporaryDirectory() as folder:
        os.environ.update(BUB_HOME=str(Path(folder) / "home"), BUB_MODEL="offline")
        os.environ.pop("JPY_SESSION_NAME", None)
        os.chdir(folder)
        try:
            yield Path(folder)
        finally:
            os.chdir(here)
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


def _turn_seconds(handoffs: int, runs: int) -> float:
    """The median ``%%bub`` turn in a fresh shell whose notebook's agents handed the conversation on ``handoffs``
    times first."""
    from IPython.core.interactiveshell import InteractiveShell

    with _notebook_folder() as folder:
        notebook = Tape(current_notebook().tape_name, FileTapeStore(folder / "home" / "tapes"))
        _team(notebook, handoffs)
        InteractiveShell.clear_instance()
        shell: Any = InteractiveShell.instance()
        try:

            def turn() -> None:
                shell.run_cell("%%bub --no-stream\nWhat did the last phase settle?").raise_error()

            with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
                for line in ("%load_ext bub_nb", *(f"%agent {name}" for name in _AGENTS)):
                    shell.run_cell(line).raise_error()
                return median_time(turn, runs=runs, warmup=1)
        finally:
            shell.run_cell("%unload_ext bub_nb")
            InteractiveShell.clear_instance()


def rows(handoffs: tuple[int, ...] = (10, 100), turns: bool = True) -> list[list[str]]:
    found = []
    for count in handoffs:
        with tempfile.TemporaryDirectory() as folder:
            team = _team(Tape("nb", FileTapeStore(folder)), count)
            holders = team.tape_of(team.holder() or "main")

            def kept(team: Team = team, holders: Tape = holders) -> None:
                holders.append_message({"role": "user", "content": "one more"})  # another writer appended
                team.holder()

            appending = median_time(lambda: holders.append_message({"role": "user", "content": "one more"}), runs=9)  # noqa: B023
            read = max(median_time(kept, runs=9) - appending, 0.0)
            fresh = median_time(lambda: Team(team.tape, list(_AGENTS)).holder(), runs=5)  # noqa: B023
            view = median_time(lambda: holders.view(), runs=9)  # noqa: B023
        target = ""
        if count >= 1000:
            target = f"< {HOLDER_TARGET_MS:g} ms {'✓' if read * 1000 < HOLDER_TARGET_MS else '✗'}"
        found.append(
            [
                f"who holds it, kept, after {count} handoffs",
                ms(read),
                f"{ms(view)} (holder's view)",
                _x(read, view),
                target,
            ]
        )
        found.append(
            [
                f"who holds it, from scratch, after {count}",
                ms(fresh),
                f"{ms(view)} (holder's view)",
                _x(fresh, view),
                "",
            ]
        )
    if turns:
        none = _turn_seconds(0, runs=11)
        for count in handoffs:
            after = _turn_seconds(count, runs=11)
            ratio = after / none
            target = f"≤ {TURN_TARGET:g}x {'✓' if ratio <= TURN_TARGET else '✗'}" if count >= 1000 else ""
            found.append(
                [f"%%bub turn after {count} handoffs", ms(after), f"{ms(none)} (after none)", _x(after, none), target]
            )
    return found


def _x(value: float, baseline: float) -> str:
    return f"{value / baseline:.2f}x" if baseline else "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--handoffs", type=int, nargs="+", default=[10, 100, 1000], help="handoffs written first")
    parser.add_argument("--no-turns", action="store_true", help="leave out the %%%%bub turns in a shell")
    args = parser.parse_args(argv)
    print_table(["figure", "bub_nb", "baseline", "ratio", "target"], rows(tuple(args.handoffs), not args.no_turns))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
