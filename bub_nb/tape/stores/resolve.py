"""Which store a folder or a DSN means: one shared store per folder and per database, reusing indexes and pools."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from bub_nb.errors import EntryNotFoundError, TapeAccessError, TapeError
from bub_nb.tape.names import validate_tape_name
from bub_nb.tape.stores.file import FileTapeStore
from bub_nb.tape.stores.protocol import KnowsOwners, TapeStore

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
        raise TapeError(
            "A postgresql:// store needs the postgres extra: pip install -e '.[postgres]' in the bub_nb checkout"
        ) from None
    with _stores_lock:
        store = _databases.get((dsn, schema))
        if store is None:
            store = _databases[dsn, schema] = PostgresTapeStore(dsn, schema=schema)
        return store  # type: ignore[no-any-return]


def resolve_store(store: TapeStore | str | None) -> TapeStore | None:
    """A store from what the caller gave: a store, a ``postgresql://`` DSN, else ``$BUB_STORE`` (or ``None``)."""
    from bub_nb.tape.stores.dsn import is_dsn, redact_dsn, remember_dsn_secrets

    if store is None:
        store = os.environ.get("BUB_STORE") or None
        if store is None:
            return None
    if isinstance(store, str):
        remember_dsn_secrets(store)
        if not is_dsn(store):
            raise TapeError(f"Store {redact_dsn(store)!r} is not a postgresql:// DSN")
        return database_store(store.strip())
    return store


def check_folder(directory: Path) -> Path:
    """``directory`` if it is, or can become, a folder; a ``TapeError`` naming it otherwise."""
    existing = directory
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise TapeError(f"Tape folder {str(directory)!r} cannot be made: {str(existing)!r} is not a folder")
    return directory


def readable_tape(store: TapeStore, tape: str, address: str) -> str:
    """``tape``, named by ``address``, if this store holds it and may read it; one clear line otherwise.

    On a database another role's tape is ``owner/name``: a role that may not read it is told so, without
    learning whether it exists.
    """
    if isinstance(store, KnowsOwners):
        owner, name = store.owner_and_name(tape)
        validate_tape_name(name)
        role = getattr(store, "role", "")
        if not store.exists(tape) and owner != role:
            raise TapeAccessError(
                f"Address {address!r} names tape {name!r} of role {owner!r}, which role {role!r} may not read"
            )
    else:
        validate_tape_name(tape)
    if not store.exists(tape):
        raise EntryNotFoundError(f"Address {address!r} names tape {tape!r}, which does not exist")
    return tape
