"""A notebook's tape written into one file beside the notebook, to travel with it (git, a shared folder), and
taken up again in a Bub home that lacks it.

The file is ``<notebook stem>.tape.jsonl`` beside the notebook rather than the notebook's own metadata: a tape
grows with every turn and holds whole model replies, which would swell the ``.ipynb`` and put every turn's JSON
into its diffs, while a line-per-entry file beside it diffs and merges line by line (two clones' appends meet in
a union merge that ``bub-nb tapes merge`` then renumbers). It is written whole and atomically, mode 0600, with
the user's home and the Bub home written as ``~`` and ``$BUB_HOME``: no absolute home path travels with it.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from bub_nb.errors import TapeError, TapeNotFoundError
from bub_nb.tape._lines import decode_record, dumps
from bub_nb.tape.locations import bub_home, tapes_home
from bub_nb.tape.names import session_tape_name

if TYPE_CHECKING:
    from bub_nb.tape.tape import Tape

ATTACHED_SUFFIX: Final = ".tape.jsonl"
MERGE_HINT: Final = "`bub-nb tapes merge` renumbers them"


@dataclass(frozen=True)
class Attached:
    """What an attach or an import did: the file written, and how many entries it holds."""

    path: Path
    entries: int
    tape: str


def attached_path(notebook: str | Path) -> Path:
    """The file beside ``notebook`` that holds its tape: ``analysis.ipynb`` -> ``analysis.tape.jsonl``."""
    path = Path(notebook).expanduser()
    return path.with_name(path.stem + ATTACHED_SUFFIX)


def notebook_tape_name(notebook: str | Path) -> str:
    """The tape Bub and bub_nb name for ``notebook`` in this place (it follows the notebook's folder)."""
    path = Path(notebook).expanduser().resolve()
    return session_tape_name(path.parent, path.name)


def _home_prefixes(home: str | Path | None) -> list[tuple[str, str]]:
    pairs = {str(bub_home(home).resolve()): "$BUB_HOME", str(bub_home(home)): "$BUB_HOME"}
    with contextlib.suppress(RuntimeError):  # no home directory to tell
        user = Path.home()
        pairs.setdefault(str(user.resolve()), "~")
        pairs.setdefault(str(user), "~")
    return sorted(
        ((prefix, word) for prefix, word in pairs.items() if prefix not in ("", "/")), key=lambda p: -len(p[0])
    )


def _without_homes(value: Any, prefixes: list[tuple[str, str]]) -> Any:
    if isinstance(value, str):
        for prefix, word in prefixes:
            value = value.replace(prefix, word)
        return value
    if isinstance(value, dict):
        return {_without_homes(key, prefixes): _without_homes(item, prefixes) for key, item in value.items()}
    if isinstance(value, list):
        return [_without_homes(item, prefixes) for item in value]
    return value


def _write_whole(path: Path, lines: list[bytes]) -> None:
    """``lines`` as the whole of ``path``, mode 0600: written beside it and moved into place, so a reader sees the
    old file or the new one and nothing else is left in the folder."""
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")  # 0600
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.writelines(line + b"\n" for line in lines)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, 0o600)
        os.replace(temporary, path)  # a link at ``path`` is replaced, never written through
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def attach(tape: Tape, notebook: str | Path, *, home: str | Path | None = None) -> Attached:
    """Write ``tape``, every entry as it is, into :func:`attached_path` of ``notebook`` (replacing an older copy).

    A tape whose ids repeat is refused, as every read refuses it, naming ``bub-nb tapes merge``."""
    prefixes = _home_prefixes(home)
    lines = [dumps(_without_homes(entry.to_dict(), prefixes)) for entry in tape.read()]
    target = attached_path(notebook)
    if not target.parent.is_dir():
        raise TapeError(f"Cannot attach the tape beside {str(notebook)!r}: its folder does not exist")
    try:
        _write_whole(target, lines)
    except OSError as error:
        raise TapeError(f"Cannot write {str(target)!r}: {error.strerror or error}") from None
    return Attached(target, len(lines), tape.name)


def import_attached(notebook: str | Path, *, home: str | Path | None = None) -> Attached:
    """Take up ``notebook``'s attached tape as the notebook's tape in the Bub home ``home``, which must lack it
    (or hold it empty): the entries keep their ids, so every citation and anchor still points where it did."""
    source = attached_path(notebook)
    try:
        data = source.read_bytes()
    except FileNotFoundError:
        raise TapeNotFoundError(f"No attached tape {str(source)!r}; `%tape attach` writes it") from None
    except OSError as error:
        raise TapeError(f"Cannot read {str(source)!r}: {error.strerror or error}") from None
    lines, last = [], 0
    for number, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        record = decode_record(line)
        if record is None:
            raise TapeError(f"Line {number} of {str(source)!r} is not a tape entry; nothing was imported")
        if record["id"] <= last:
            raise TapeError(
                f"The attached tape {str(source)!r} has ids out of order: {record['id']} follows {last} (two clones' "
                f"entries kept side by side); nothing was imported until {MERGE_HINT}"
            )
        last = record["id"]
        lines.append(line)
    name = notebook_tape_name(notebook)
    folder = tapes_home(home)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    target = folder / f"{name}.jsonl"
    if target.exists() and target.stat().st_size:
        raise TapeError(
            f"Bub home {str(bub_home(home))!r} already holds this notebook's tape {name!r}; nothing was imported. "
            f"`bub-nb tapes merge {target} {source}` merges the two copies"
        )
    try:
        _write_whole(target, lines)
    except OSError as error:
        raise TapeError(f"Cannot write {str(target)!r}: {error.strerror or error}") from None
    return Attached(target, len(lines), name)
