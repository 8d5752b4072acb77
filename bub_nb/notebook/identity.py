"""A notebook's identity from its saved file: the tape its outputs name, read before a turn's first write, the
choice ``%tape continue`` keeps under the home (``<home>/notebooks/<tape>.json``), and what a first turn says about
its tape (``RenameNotice``: a kernel that cannot tell its notebook, a renamed notebook's new tape)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from bub_nb.errors import BubNbError
from bub_nb.markup import code_span
from bub_nb.notebook.usage_errors import one_line
from bub_nb.tape import current_notebook
from bub_nb.tape.attach import attached_path, import_attached
from bub_nb.tape.identity import KEEP_OWN, Decision, Evidence, Identity, decide
from bub_nb.tape.locations import NotebookLocation, bub_home, readable_tape_name, recorded_notebook
from bub_nb.tape.names import notebook_of_tape, validate_tape_name
from bub_nb.tape.renamed import left_behind

if TYPE_CHECKING:
    from bub_nb.notebook.session import NotebookSession
    from bub_nb.tape import Tape

KEPT_FOLDER = "notebooks"
"""The folder under the Bub home that keeps each notebook's ``%tape continue`` choice."""


def claimed_tape(notebook: Path) -> str | None:
    """The tape the saved notebook's outputs name (the last answer's, in cell order), or ``None`` when the file is
    missing, unreadable, or names none that could be a tape's name. An agent's tape names its notebook's."""
    try:
        saved = json.loads(notebook.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    found = None
    cells = saved.get("cells") if isinstance(saved, dict) else None
    for cell in cells if isinstance(cells, list) else ():
        outputs = cell.get("outputs") if isinstance(cell, dict) else None
        for output in outputs if isinstance(outputs, list) else ():
            metadata = output.get("metadata") if isinstance(output, dict) else None
            ours = metadata.get("bub_nb") if isinstance(metadata, dict) else None
            name = ours.get("tape") if isinstance(ours, dict) else None
            if isinstance(name, str):
                try:
                    found = notebook_of_tape(validate_tape_name(name))
                except BubNbError:
                    continue  # a name no tape can have: the file was edited by hand, or by someone hostile
    return found


def kept_file(home: Path, own: str) -> Path:
    return home / KEPT_FOLDER / f"{validate_tape_name(own)}.json"


def kept_choice(home: Path, own: str) -> str | None:
    """The tape ``%tape continue`` chose for the notebook whose own tape is ``own`` (``KEEP_OWN`` for its own)."""
    try:
        data = json.loads(kept_file(home, own).read_text(encoding="utf-8"))
        tape = data.get("tape") if isinstance(data, dict) else None
        return KEEP_OWN if tape == KEEP_OWN else validate_tape_name(tape) if isinstance(tape, str) else None
    except (OSError, ValueError, BubNbError):
        return None


def keep_choice(home: Path, own: str, tape: str, notebook: str) -> Path:
    """Keep ``tape`` (or ``KEEP_OWN``) as the choice for the notebook whose own tape is ``own``: a 0600 file,
    written aside and renamed over the old one."""
    path = kept_file(home, own)
    path.parent.mkdir(parents=True, exist_ok=True)
    aside = path.with_suffix(".json.tmp")
    descriptor = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        json.dump({"tape": tape, "notebook": notebook}, file)
    os.replace(aside, path)
    return path


def _evidence(session: NotebookSession, notebook: NotebookLocation, home: Path) -> tuple[Evidence, Tape | None]:
    own = notebook.tape_name
    path = notebook.workspace / notebook.session_id
    store = session.open(own).base_store  # opening writes nothing
    kept = kept_choice(home, own)
    claimed = None if kept is not None else claimed_tape(path)
    if claimed is None and kept is None and store.exists(own):
        recorded = recorded_notebook(session.open(own, create=False))
        other = Path(recorded) if recorded else None
        went = other is not None and other != path and other.exists() and claimed_tape(other) == own
        return Evidence(own, None, kept, own_went_elsewhere=went), None
    own_has_entries = store.exists(own) and store.stats(own).entries > 0
    attached = not own_has_entries and attached_path(path).is_file()
    if claimed is None or claimed == own:
        return Evidence(own, claimed, kept, own_has_entries, attached=attached), None
    exists = store.exists(claimed)
    tape = session.open(claimed, create=False) if exists and not own_has_entries else None
    elsewhere = False
    if tape is not None:
        recorded = recorded_notebook(tape)
        other = Path(recorded) if recorded else None
        elsewhere = other is not None and other != path and other.exists() and claimed_tape(other) == claimed
    return Evidence(own, claimed, kept, own_has_entries, exists, elsewhere, attached), tape


class NotebookIdentity:
    """Decides once per notebook path, when the session first resolves its tape (before any write), which tape the
    notebook writes, and keeps the one line that says so, when that is not simply its own, for the next turn."""

    def __init__(self, session: NotebookSession) -> None:
        self._session = session
        self._decided: dict[str, str | None] = {}  # own tape -> what session.use takes, None for the own tape
        self._note: str | None = None
        self._fresh: set[str] = set()  # fresh tapes decided here, which exist once the first turn writes
        self._took_up = False

    def settle(self, notebook: NotebookLocation) -> None:
        """Put the session on the decided tape (deciding it the first time this notebook's tape is resolved)."""
        session = self._session
        if session.settings.tape or session.settings.store or notebook.source in ("cwd", "kernel", "run"):
            return  # a chosen tape, a database, or no notebook file to read
        own = notebook.tape_name
        if own not in self._decided:
            self._decided[own] = None
            home = bub_home(session.settings.home or None)
            try:
                evidence, claimed = _evidence(session, notebook, home)
                self._decided[own], self._note = self._act(decide(evidence), evidence, claimed, notebook)
            except (BubNbError, OSError):
                return  # a home that cannot be read is reported by the command that writes to it
        target = self._decided[own]
        if target is not None:
            session.use(target, create=target in self._fresh)

    def note(self) -> str | None:
        """The line a turn shows before it writes, once: which tape the notebook continues, forked, or could not."""
        _ = self._session.tape  # resolving the tape decides
        note, self._note = self._note, None
        return note

    def took_up_attached(self) -> bool:
        """Whether this kernel took up the tape attached beside the notebook (so ``--import`` has nothing to do)."""
        _ = self._session.tape  # resolving the tape decides
        return self._took_up

    def kept(self, own: str, target: str | None) -> None:
        """``%tape continue`` chose ``target`` (None for the own tape) in this kernel too."""
        self._decided[own], self._note = target, None

    def _act(
        self, decision: Decision, evidence: Evidence, claimed: Tape | None, notebook: NotebookLocation
    ) -> tuple[str | None, str | None]:
        name = code_span(notebook.session_id)
        if decision.identity is Identity.CONTINUE:
            tape = self._session.open(decision.tape, create=False)
            if evidence.kept is not None:
                return decision.tape, None  # the user chose it: nothing to say again
            return decision.tape, (
                f"Note: {name} continues tape {code_span(tape.name)} ({len(tape)} entries), which its outputs name: "
                "the notebook was renamed or moved."
            )
        if decision.identity is Identity.FORK and claimed is not None:
            child = claimed.fork_session(evidence.own)
            return None, (
                f"Note: {name} is a copy of a notebook that still has tape {code_span(claimed.name)}; its history was "
                f"forked into this notebook's own tape {code_span(child.name)} ({len(child)} entries)."
            )
        if decision.identity is Identity.ATTACHED:
            path = notebook.workspace / notebook.session_id
            source = code_span(attached_path(path).name)
            try:
                done = import_attached(path, home=self._session.settings.home or None)
            except BubNbError as exc:
                return None, f"Note: {name} has the tape {source} attached beside it, not taken up: {one_line(exc)}"
            self._took_up = True
            return done.tape, (
                f"Note: {name} continues from {source}, the tape attached beside it ({done.entries} entries), as its "
                f"own tape {code_span(done.tape)} in this home."
            )
        if decision.identity is Identity.FRESH:
            tape = self._session.open(_first_free(self._session, evidence.own), create=True)
            self._fresh.add(tape.name)
            home = bub_home(self._session.settings.home or None)
            keep_choice(home, evidence.own, tape.name, str(notebook.workspace / notebook.session_id))
            return tape.name, (
                f"Note: {name} stands where a notebook that was renamed or moved used to be, and tape "
                f"{code_span(evidence.own)} went on with that one; this notebook starts tape {code_span(tape.name)} "
                f"of its own, kept in every kernel. `%tape continue {evidence.own}` writes the old tape instead."
            )
        if decision.identity is Identity.FOREIGN:
            return None, (
                f"Note: {name}'s outputs name tape {code_span(decision.tape)}, which this home does not have (cloned "
                f"or copied from elsewhere?); this turn starts the notebook's own tape {code_span(evidence.own)}. "
                "`%tape continue NAME` continues a tape of this home instead; `%tape continue --own` keeps the own "
                "tape and ends this note."
            )
        return None, None


def _first_free(session: NotebookSession, own: str) -> str:
    """``OWN-2``, ``OWN-3``, ...: the first such tape name this home does not hold yet."""
    store = session.open(own, create=False).base_store
    number = 2
    while store.exists(f"{own}-{number}"):
        number += 1
    return f"{own}-{number}"


def continue_tape(session: NotebookSession, target: str) -> tuple[Tape, Path]:
    """``%tape continue NAME|--own``: this notebook writes tape ``NAME`` (which must exist) or its own from now on,
    in every kernel; the choice is kept under the home."""
    notebook = current_notebook()
    if notebook.source in ("cwd", "kernel", "run"):
        raise BubNbError("%tape continue needs a notebook file: this kernel cannot tell which notebook it runs")
    if session.settings.store:
        raise BubNbError("%tape continue keeps its choice under a Bub home; on a database use %tape use NAME")
    own, home = notebook.tape_name, bub_home(session.settings.home or None)
    if target != KEEP_OWN:
        tape = session.open(target, create=False)
        tape.stats()  # a tape that cannot be read is refused here, before anything is kept
        if tape.path is not None and tape.path.parent != home / "tapes":
            raise BubNbError(f"%tape continue takes a tape of this home by name; {target!r} is a file elsewhere")
    tape = session.use(own if target == KEEP_OWN else target, create=target == KEEP_OWN)
    path = str(notebook.workspace / notebook.session_id)
    if session.identity is not None:
        session.identity.kept(own, None if tape.name == own else target)
    return tape, keep_choice(home, own, KEEP_OWN if tape.name == own else tape.name, path)


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
