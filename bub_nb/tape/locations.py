"""Where tapes live and what they are called: Bub's per-session names and the current notebook's tape."""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from bub_nb.errors import TapeNameError
from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.events import NOTEBOOK
from bub_nb.tape.names import check_tape_file_name

DEFAULT_SESSION_ID = "default"
NOTEBOOK_EVENT = NOTEBOOK  # the name the notebook layer knows it by
# Room for the longest file made from a name, "<name>.jsonl.<stamp>-<n>.bak", within 255 bytes.
MAX_NAME_BYTES = 200


def bub_home(home: str | Path | None = None) -> Path:
    """The Bub home folder: ``home``, else ``$BUB_HOME``, else ``~/.bub``."""
    return Path(home or os.environ.get("BUB_HOME") or "~/.bub").expanduser()


def tapes_home(home: str | Path | None = None) -> Path:
    """The folder holding tape files, ``<bub home>/tapes``, shared with Bub."""
    return bub_home(home) / "tapes"


def session_tape_name(workspace: str | Path, session_id: str) -> str:
    """Bub's tape name for a session: ``md5(workspace)[:16] + "__" + md5(session_id)[:16]``."""
    workspace_hash = hashlib.md5(str(Path(workspace).resolve()).encode()).hexdigest()[:16]
    session_hash = hashlib.md5(session_id.encode()).hexdigest()[:16]
    return f"{workspace_hash}__{session_hash}"


def check_file_name(name: str) -> str:
    """``name`` if ``<name>.jsonl`` stays inside its folder; the store's own, looser check.

    Names taken from existing files (``my..notes.jsonl``) pass; anything with a separator, ``.``,
    ``..``, a NUL or too many bytes does not.
    """
    if (
        not isinstance(name, str)
        or name in ("", ".", "..")
        or any(mark in name for mark in ("/", "\\", "\x00", os.sep, os.altsep or "/"))
        or len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES
        or not _encodable(name)
    ):
        raise TapeNameError(f"Tape name {name!r} cannot name a file inside the tapes folder")
    return name


def _encodable(name: str) -> bool:
    """Whether ``name`` can be a file name here (a lone surrogate cannot)."""
    try:
        os.fsencode(name)
    except UnicodeError:
        return False
    return True


def validate_tape_name(name: str) -> str:
    """Return ``name`` if it is a plain tape name; raise ``TapeNameError`` quoting it otherwise."""
    problem = None
    if not isinstance(name, str) or not name.strip():
        problem = "it is empty"
    elif "/" in name or "\\" in name or os.sep in name or (os.altsep and os.altsep in name):
        problem = "it contains a path separator"
    elif ".." in name:
        problem = "it contains '..'"
    elif "\x00" in name or name.startswith("."):
        problem = "it is not a plain file name"
    elif len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        problem = f"it is longer than {MAX_NAME_BYTES} bytes"
    elif not _encodable(name):
        problem = "the file system cannot store it (a lone surrogate)"
    if problem:
        raise TapeNameError(
            f"Tape name {name!r} is not allowed: {problem}; use a plain name, or a path ending in .jsonl"
        )
    return check_tape_file_name(name)


@dataclass(frozen=True, slots=True)
class NotebookLocation:
    """The notebook a kernel runs, as Bub would see it: a workspace and a session id."""

    workspace: Path
    session_id: str
    source: str

    @property
    def tape_name(self) -> str:
        return session_tape_name(self.workspace, self.session_id)


def current_notebook() -> NotebookLocation:
    """Find the running notebook: ``JPY_SESSION_NAME``, VS Code's ``__vsc_ipynb_file__``, papermill's
    ``PAPERMILL_INPUT_PATH`` parameter, the notebook the kernel's launcher names, else the cwd."""
    main = sys.modules.get("__main__")
    candidates = [
        ("JPY_SESSION_NAME", os.environ.get("JPY_SESSION_NAME")),
        ("__vsc_ipynb_file__", getattr(main, "__vsc_ipynb_file__", None)),
        ("PAPERMILL_INPUT_PATH", getattr(main, "PAPERMILL_INPUT_PATH", None)),
    ]
    for source, value in candidates:
        if isinstance(value, str) and value.strip():
            path = Path(value).expanduser()
            if not path.is_absolute():
                path = path if path.exists() else Path.cwd() / path.name
            return NotebookLocation(path.resolve().parent, path.name, source)
    from bub_nb.tape._launcher import launching_notebook

    launched = launching_notebook()
    if launched is not None:
        return NotebookLocation(launched.parent, launched.name, "launcher")
    return NotebookLocation(Path.cwd(), DEFAULT_SESSION_ID, "cwd")


class _ReadsBackwards(Protocol):
    def iter_reverse(self, kinds: Sequence[str] = ()) -> Iterator[TapeEntry]: ...


def recorded_notebook(tape: _ReadsBackwards) -> str | None:
    """The notebook path the newest ``notebook`` event on ``tape`` records, if any."""
    for entry in tape.iter_reverse(kinds=("event",)):
        data = entry.payload.get("data")
        if entry.name == NOTEBOOK_EVENT and isinstance(data, dict) and isinstance(data.get("path"), str):
            return str(data["path"])
    return None
