"""``open_tape``: a tape by name, by path, or the current notebook's."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from bub_nb.errors import TapeError, TapeNameError, TapeNotFoundError
from bub_nb.tape.locations import current_notebook, tapes_home
from bub_nb.tape.names import check_file_name, check_tape_file_name, validate_tape_name
from bub_nb.tape.stores.archive import is_archive_name, open_archive
from bub_nb.tape.stores.file import FileTapeStore
from bub_nb.tape.stores.protocol import TapeStore
from bub_nb.tape.tape import Tape

_stores: dict[Path, FileTapeStore] = {}
_databases: dict[tuple[str, str], Any] = {}
_stores_lock = threading.Lock()


def file_store(directory: str | Path) -> FileTapeStore:
    """The shared store for a folder, so every tape opened there reuses one warm index."""
    key = Path(directory).expanduser().resolve()
    with _stores_lock:
        store = _stores.get(key)
        if store is None:
            store = _stores[key] = FileTapeStore(key)
        return store


def database_store(dsn: str, schema: str = "bub_nb") -> TapeStore:
    """The shared ``PostgresTapeStore`` for a DSN, so every tape opened on it reuses one connection pool."""
    try:
        from bub_nb.tape.stores.postgres import PostgresTapeStore
    except ImportError:
        raise TapeError("A postgresql:// store needs the postgres extra: pip install 'bub_nb[postgres]'") from None
    with _stores_lock:
        store = _databases.get((dsn, schema))
        if store is None:
            store = _databases[dsn, schema] = PostgresTapeStore(dsn, schema=schema)
        return store  # type: ignore[no-any-return]


def resolve_store(store: TapeStore | str | None) -> TapeStore | None:
    """A store from what the caller gave: a store, a ``postgresql://`` DSN, else ``$BUB_STORE`` (or ``None``)."""
    from bub_nb.tape.stores.dsn import is_dsn, redact_dsn

    if store is None:
        store = os.environ.get("BUB_STORE") or None
        if store is None:
            return None
    if isinstance(store, str):
        if not is_dsn(store):
            raise TapeError(f"Store {redact_dsn(store)!r} is not a postgresql:// DSN")
        return database_store(store.strip())
    return store


def _check_folder(directory: Path) -> Path:
    """``directory`` if it is, or can become, a folder; a ``TapeError`` naming it otherwise."""
    existing = directory
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise TapeError(f"Tape folder {str(directory)!r} cannot be made: {str(existing)!r} is not a folder")
    return directory


def open_tape(
    name_or_path: str | Path | None = None,
    *,
    home: str | Path | None = None,
    store: TapeStore | str | None = None,
    create: bool = True,
) -> Tape:
    """Open a tape. Nothing is written until something is appended.

    ``store`` is a ``TapeStore`` or a ``postgresql://`` DSN; without one, ``$BUB_STORE`` names a
    database, and otherwise tapes are files under the Bub home.

    - ``None``: the current notebook's tape, named as Bub names sessions.
    - a ``Path``, or a string ending in ``.jsonl``: that file.
    - an archive a reset left (``<name>.jsonl.<stamp>.bak``), as a path or a file name under
      ``<home>/tapes``: that archive, read-only.
    - any other string: a tape name under ``<home>/tapes`` (``$BUB_HOME``, default ``~/.bub``).

    With ``create=False`` a tape that does not exist yet is a :class:`TapeNotFoundError` naming
    the tapes it may have meant, instead of a new empty tape (a typo must not start a new session).
    """
    if name_or_path is not None and is_archive_name(name_or_path):
        path = Path(name_or_path).expanduser()
        if not path.exists() and path.name == str(name_or_path):  # a bare file name: the tapes home's archive
            path = tapes_home(home) / path.name
        return open_archive(path, file_store(_check_folder(path.parent)))
    if isinstance(name_or_path, Path) or (isinstance(name_or_path, str) and name_or_path.endswith(".jsonl")):
        path = Path(name_or_path).expanduser()
        if not path.name.endswith(".jsonl"):
            raise TapeNameError(f"Tape path {str(path)!r} must end in .jsonl")
        name = path.name[: -len(".jsonl")]
        try:
            check_file_name(name)
        except TapeNameError:
            raise TapeNameError(f"Tape path {str(path)!r} does not name a tape: {name!r} comes before .jsonl") from None
        check_tape_file_name(name)
        given = resolve_store(store) if store is not None else None
        return _existing(Tape(name, given or file_store(_check_folder(path.parent))), create)
    name = current_notebook().tape_name if name_or_path is None else validate_tape_name(name_or_path)
    chosen = resolve_store(store) if home is None or store is not None else None
    return _existing(Tape(name, chosen or file_store(_check_folder(tapes_home(home)))), create)


def _existing(tape: Tape, create: bool) -> Tape:
    if create or tape.store.exists(tape.name):
        return tape
    import difflib

    near = difflib.get_close_matches(tape.name, tape.store.list_tapes(), n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(near)}?" if near else ""
    where = f" at {str(tape.path)!r}" if tape.path is not None else ""
    raise TapeNotFoundError(f"Tape {tape.name!r} does not exist{where}{hint} (use --new, or create=True, to start it)")
