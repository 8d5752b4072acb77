"""A renamed notebook's first turn: its tape is new, and the tape its old name left can be continued."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from bub_nb.tape import current_notebook
from bub_nb.tape.locations import readable_tape_name
from bub_nb.tape.renamed import left_behind

if TYPE_CHECKING:
    from bub_nb.notebook.session import NotebookSession


class RenameNotice:
    """Says once per tape, before a turn, when this notebook's own tape is still empty and its folder holds
    the tape of a notebook whose file is gone: most likely this notebook before it was renamed."""

    def __init__(self, session: NotebookSession) -> None:
        self._session = session
        self._checked: set[str] = set()

    def text(self) -> str | None:
        notebook = current_notebook()
        tape = self._session.tape
        if notebook.source == "cwd" or tape.name != notebook.tape_name or tape.name in self._checked:
            return None
        self._checked.add(tape.name)
        if tape.stats().entries:
            return None
        found = left_behind(tape.base_store, notebook)
        if not found:
            return None
        old, others = found[0], len(found) - 1
        more = f" ({others} more tape{'s' if others > 1 else ''} of gone notebooks in this folder)" if others else ""
        return (
            f"Note: this notebook starts a new, empty tape `{readable_tape_name(tape)}`, because a notebook's tape "
            f"is named after its file. `{Path(old.notebook).name}` in this folder is gone, renamed perhaps, and its "
            f"tape `{old.tape}` holds {old.entries} entries{more}. `%tape use {old.tape}` continues that tape instead."
        )
