"""What a notebook's first turn says about its tape: a kernel that cannot tell its notebook keeps a tape of its
own; a renamed notebook's tape is new, and the tape its old name left can be continued."""

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
        self._said_unnamed = False

    def text(self) -> str | None:
        notebook = current_notebook()
        tape = self._session.tape
        if notebook.source == "kernel" and tape.name == notebook.tape_name:
            return self._unnamed(notebook.undecided)
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

    def _unnamed(self, notebooks: tuple[Path, ...]) -> str | None:
        if self._said_unnamed:
            return None
        self._said_unnamed = True
        names = ", ".join(f"`{path.name}`" for path in notebooks[:4]) + (", ..." if len(notebooks) > 4 else "")
        return (
            f"Note: this kernel cannot tell which notebook it runs ({names} hold the cells it ran so far), so its "
            f"turns go to a tape of its own, `{self._session.tape.name}`, not the folder's shared one. "
            "A runner that sets `JPY_SESSION_NAME=path/to/notebook.ipynb` (or papermill's `PAPERMILL_INPUT_PATH` "
            "parameter) names the notebook for good; `%config BubMagics.tape = 'NAME'` picks a tape in this kernel."
        )
