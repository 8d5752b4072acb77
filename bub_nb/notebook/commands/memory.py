"""``%memory`` actions: show the tape's memory zone, save long-term memory, add a daily note, clear, prune."""

from __future__ import annotations

from typing import TYPE_CHECKING

from IPython.core.error import UsageError
from IPython.display import display

from bub_nb.memory import MemoryZone
from bub_nb.notebook.display import show
from bub_nb.tape.locations import readable_tape_name

if TYPE_CHECKING:
    from bub_nb.notebook.session import NotebookSession


class MemoryCommands:
    """The actions of ``%memory`` on the memory zone of the tape the next turn runs on (the holder's, once the
    notebook has agents); bad ones are one-line ``UsageError``s, and every confirmation names the tape."""

    NAMES = ("show", "save", "daily", "clear", "prune")

    def __init__(self, session: NotebookSession) -> None:
        self._session = session

    def run(self, action: str, text: str, date: str | None) -> None:
        tape = self._session.holders_tape()
        zone = MemoryZone(tape)
        if action in ("save", "daily") and not text:
            raise UsageError(f"%memory {action} needs the text to store, e.g. %memory {action} prefers pandas")
        if action != "daily" and date:
            raise UsageError(f"--date goes with %memory daily, not with {action!r}")
        if action not in self.NAMES:
            raise UsageError(f"Unknown %memory action {action!r}; use {', '.join(self.NAMES)}")
        if action in ("show", "clear", "prune") and text:
            raise UsageError(f"%memory {action} takes no text, got {text!r}; did you mean %memory save {text}?")
        if action == "show":
            from bub_nb.notebook.widgets import MemoryView

            display(MemoryView(zone))
            return
        if action == "save":
            snapshot = zone.save_long_term(text)
            message = f"Long-term memory saved (zone version {snapshot.version})."
        elif action == "daily":
            snapshot = zone.append_daily(text, date)
            message = f"Daily note added (zone version {snapshot.version})."
        elif action == "clear":
            snapshot = zone.clear()
            message = f"Memory cleared (zone version {snapshot.version}); earlier versions stay on the tape."
        else:
            pruned = zone.prune()
            message = f"Pruned {pruned} daily notes older than {zone.retention_days} days."
        show(f"{message[:-1]} on tape `{readable_tape_name(tape)}`.")
