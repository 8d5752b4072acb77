"""What a redaction by value names but does not rewrite: notebooks' saved outputs, exports, IPython's history.

A notebook file and an exported transcript or Parquet file are the user's documents: the redaction names the
ones that hold the text (the tapes record every notebook that wrote them and every export, with its path).
IPython's history database is the user's own file too; it is scrubbed only when asked (``--ipython-history``).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bub_nb.errors import TapeError
from bub_nb.tape.corrections.redaction import live_name
from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.events import EXPORT, NOTEBOOK
from bub_nb.tape.stores.protocol import FileBacked, MayBeReadOnly, SearchesLines, TapeStore


def record_export(tapes: Iterable[Any], path: str | Path, fmt: str) -> None:
    """Record that ``tapes`` were written out to ``path`` (an ``export`` event each), so a redaction can name it.

    An archive's export is recorded on its live tape; a tape nothing can be appended to records nothing.
    ``write_jsonl`` and ``write_parquet`` record what they write; a caller writing a text it was given (a
    Markdown transcript) records it here.
    """
    data = {"path": str(Path(path).expanduser().resolve()), "format": fmt}
    for tape in tapes:
        store: TapeStore | None = getattr(tape, "base_store", None)
        name = tape.name
        if store is None:  # not a stored tape (a test double of one): nothing to record on
            continue
        if isinstance(store, MayBeReadOnly) and not store.writable(name):  # an archive
            name = live_name(name)
            if name == tape.name or not store.exists(name):
                continue
        store.append(name, [TapeEntry.event(EXPORT, data)])


def _recorded(store: TapeStore, event: str) -> list[tuple[str, str]]:
    """``(tape, path)`` for every ``event`` naming a path on the store's live tapes."""
    found = []
    for name in store.list_tapes():
        # Only the lines naming the event are decoded, where the store can skip the others.
        entries = (
            store.iter_reverse_matching(name, [event.encode()])
            if isinstance(store, SearchesLines)
            else store.read(name)
        )
        for entry in entries:
            if entry.kind == "event" and entry.payload.get("name") == event:
                data = entry.payload.get("data")
                if isinstance(data, dict) and isinstance(data.get("path"), str):
                    found.append((name, data["path"]))
    return found


def ipython_history_path() -> Path:
    """IPython's history database for the default profile (``$IPYTHONDIR``, else ``~/.ipython``)."""
    return Path(os.environ.get("IPYTHONDIR") or "~/.ipython").expanduser() / "profile_default" / "history.sqlite"


def scrub_sqlite(path: Path, text: str, mark: str) -> int:
    """Replace ``text`` by ``mark`` in every text column of every table of a SQLite file, then compact it so no
    free page keeps the old bytes; returns how many values changed."""
    changed = 0
    connection = sqlite3.connect(str(path), timeout=30)
    try:
        tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        with connection:
            for table in tables:
                if table.startswith("sqlite_"):
                    continue
                columns = [row[1] for row in connection.execute(f'PRAGMA table_info("{table}")')]
                for column in columns:
                    changed += connection.execute(
                        f'UPDATE "{table}" SET "{column}" = replace("{column}", ?, ?) '
                        f'WHERE typeof("{column}") = \'text\' AND instr("{column}", ?) > 0',
                        (text, mark, text),
                    ).rowcount
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        connection.execute("VACUUM")
    except sqlite3.Error as error:
        raise TapeError(f"IPython's history {str(path)!r} could not be scrubbed: {error}") from None
    finally:
        connection.close()
    return changed


def holds(data: bytes, forms: tuple[bytes, ...]) -> bool:
    """Whether ``data`` holds one of the byte forms of a text."""
    return any(form in data for form in forms)


def file_bytes(path: Path) -> bytes:
    """A file's bytes; none for one gone meanwhile (an index a rewrite removed) or unreadable."""
    try:
        return path.read_bytes()
    except OSError:
        return b""


def _still_holding(paths: Iterable[Path], forms: tuple[bytes, ...]) -> list[Path]:
    return [p for p in paths if p.is_file() and holds(file_bytes(p), forms)]


def history_to_scrub(ipython_history: bool | str | Path) -> Path | None:
    """The IPython history database a redaction is asked to scrub, checked before anything is rewritten."""
    if not ipython_history:
        return None
    history = ipython_history_path() if ipython_history is True else Path(ipython_history).expanduser()
    if not history.is_file():
        raise TapeError(f"IPython's history {str(history)!r} does not exist; nothing was redacted")
    return history


def name_unreached(
    store: TapeStore,
    home: Path | None,
    forms: tuple[bytes, ...],
    rewritten: set[str],
    history: tuple[Path | None, str, str],
) -> tuple[list[str], list[str]]:
    """What still holds a text outside the rewritten tapes, one line each, and what was scrubbed besides.

    ``rewritten`` names the tapes the redaction rewrote (an export of one was written before, so it holds the
    text even when compressed); ``history`` is the IPython database to scrub (or ``None``), the text and its marker.
    """
    unreached: list[str] = []
    for name, path in sorted(set(_recorded(store, NOTEBOOK))):
        if _still_holding([Path(path)], forms):
            unreached.append(f"notebook {path} (tape {name}): its saved cells or outputs; clear them and save")
    for name, path in sorted(set(_recorded(store, EXPORT))):
        if Path(path).is_file() and (name in rewritten or holds(file_bytes(Path(path)), forms)):
            unreached.append(f"export {path} (of tape {name}): written before the redaction; delete or redo it")
    if home is not None and isinstance(store, FileBacked):
        for other in _still_holding(sorted(p for p in home.rglob("*") if not p.is_symlink()), forms):
            unreached.append(f"{other} under the home: not a tape file")
    scrubbed: list[str] = []
    database, text, mark = history
    if database is not None:
        rows = scrub_sqlite(database, text, mark)
        scrubbed.append(f"IPython's history {database}: {rows} values")
        if _still_holding([database], forms):
            unreached.append(f"IPython's history {database}: still holds it after scrubbing")
    elif _still_holding([ipython_history_path()], forms):
        unreached.append(f"IPython's history {ipython_history_path()}: scrub it with --ipython-history")
    return unreached, scrubbed
