"""``%lesson start NAME``: a lesson that starts on a clean tape of its own name every time it is run."""

from __future__ import annotations

from typing import TYPE_CHECKING

from IPython.core.error import UsageError

from bub_nb.notebook.display import show

if TYPE_CHECKING:
    from bub_nb.notebook.session import NotebookSession

USAGE = "%lesson start NAME (e.g. %lesson start trip-planning)"


class LessonCommands:
    """The actions of ``%lesson`` on the session; bad ones are one-line ``UsageError``s."""

    NAMES = ("start",)

    def __init__(self, session: NotebookSession) -> None:
        self._session = session

    def run(self, words: list[str]) -> None:
        if not words:
            raise UsageError(f"%lesson needs an action: {USAGE}")
        if words[0] not in self.NAMES:
            raise UsageError(f"Unknown %lesson action {words[0]!r}; known: {', '.join(self.NAMES)}. {USAGE}")
        if len(words) != 2:
            raise UsageError(f"%lesson start takes one name: {USAGE}")
        tape = self._session.start_lesson(words[1])
        # The same words on every run, so a lesson run twice shows the same outputs.
        show(
            f"Lesson `{tape.name}` starts on a clean tape `{tape.name}`. Running it again starts it clean again; "
            f"earlier runs are kept as archives (`{tape.name}.jsonl.<time>.bak`, which `%tape use` opens)."
        )
