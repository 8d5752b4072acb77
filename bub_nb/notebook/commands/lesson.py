"""``%lesson start NAME``: a lesson that starts on a clean tape of its own name every time it is run."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from bub_nb.errors import TapeError
from bub_nb.notebook.commands.registry import Subcommands, arg
from bub_nb.notebook.display import show
from bub_nb.tape import Tape
from bub_nb.tape.names import notebook_of_tape
from bub_nb.tape.stores.lineage import store_lineage

if TYPE_CHECKING:
    from bub_nb.notebook.session import NotebookSession

LESSON = Subcommands("lesson", "A lesson that shows the same thing every time it is run.")


class LessonCommands:
    """Runs ``%lesson`` lines on the session; bad ones are one-line ``UsageError``s."""

    def __init__(self, session: NotebookSession) -> None:
        self.session = session

    def run(self, words: list[str]) -> None:
        LESSON.run(self, words)


@LESSON.add(
    "start",
    "Work on a clean tape NAME, emptied on every run: its entries, its forks and its agents' tapes so far are "
    "archived.",
    arg("name", metavar="NAME", help="the lesson's tape, e.g. trip-planning"),
)
def _start(commands: LessonCommands, args: argparse.Namespace) -> None:
    tape = start_lesson(commands.session, args.name)
    # The same words on every run, so a lesson run twice shows the same outputs.
    show(
        f"Lesson `{tape.name}` starts on a clean tape `{tape.name}`. Running it again starts it clean again; "
        f"earlier runs are kept as archives (`{tape.name}.jsonl.<time>.bak`, which `%tape use` opens)."
    )


def start_lesson(session: NotebookSession, name: str) -> Tape:
    """Switch the session to the tape ``name``, emptied: its entries so far, the tapes forked from it and the
    tapes of its agents (``<name>~<agent>``) are archived.

    The tape is then as a new one and the names its forks took are free again, so a lesson run from the
    top again shows what it showed the first time.
    """
    tape = session.open(name, create=True)
    if tape.read_only:
        raise TapeError(f"Tape {name!r} is an archive, which is read-only; a lesson needs a tape of its own")
    store = tape.base_store
    agents = [other for other in store.list_tapes() if other != tape.name and notebook_of_tape(other) == tape.name]
    for forked in [*lesson_forks(tape), *agents, tape.name]:
        if store.exists(forked):
            store.reset(forked, archive=True)
    return session.use(name, create=True)


def lesson_forks(tape: Tape) -> list[str]:
    """The tapes forked from ``tape``, and from those, as its store's lineage records them."""
    children: dict[str, list[str]] = {}
    for record in store_lineage(tape.base_store):
        children.setdefault(str(record.get("parent")), []).append(str(record.get("child")))
    found: list[str] = []
    waiting = [tape.name]
    while waiting:
        for child in children.get(waiting.pop(), []):
            if child not in found and child != tape.name:
                found.append(child)
                waiting.append(child)
    return found
