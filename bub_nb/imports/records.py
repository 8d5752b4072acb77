"""Reading a log's records: JSON Lines that may hold broken lines, and the rows of a SQLite file."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any, Final

import orjson

from bub_nb.errors import LogImportError

NOT_JSON: Final = "not-json"
"""The record type of a line that is not JSON: kept whole, as text."""

SQLITE_HEADER: Final = b"SQLite format 3\x00"


def load_json(data: bytes) -> Any:
    """One JSON value; what orjson refuses but Python writes (``NaN``, ``Infinity``, integers beyond 64 bits) too.

    Raises ``ValueError`` when it is not JSON at all.
    """
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)  # raises JSONDecodeError (a ValueError), or RecursionError when too deep


def jsonl_records(path: Path) -> Iterator[Any]:
    """Every non-blank line of a JSON Lines file, decoded; a line that is not JSON comes as ``NotJson``."""
    with path.open("rb") as handle:
        for line in handle:
            if not line.strip():
                continue
            try:
                yield load_json(line)
            except (ValueError, RecursionError):  # JSONDecodeError and UnicodeDecodeError are ValueErrors
                yield NotJson(line.decode("utf-8", "replace").rstrip("\r\n"))


class NotJson(str):
    """A line of a JSON Lines log that does not decode: the importer keeps its text."""


def is_sqlite(path: Path) -> bool:
    with path.open("rb") as handle:
        return handle.read(len(SQLITE_HEADER)) == SQLITE_HEADER


def connect(path: Path) -> sqlite3.Connection:
    """The database read-only, so an import can never change the log it reads."""
    try:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        connection.row_factory = sqlite3.Row
        connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        raise LogImportError(f"Log {str(path)!r} is not a readable SQLite database: {exc}") from exc
    return connection


def table_names(path: Path) -> set[str]:
    with closing(connect(path)) as connection:
        return {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def rows(connection: sqlite3.Connection, sql: str, *params: Any) -> list[dict[str, Any]]:
    return [dict(row) for row in connection.execute(sql, params)]


def other_rows(connection: sqlite3.Connection, known: set[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The rows of every table outside ``known``: a log's parts the importer keeps without understanding.

    SQLite's own tables and full-text indexes' shadow tables are the database's, not the log's.
    """
    names = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    virtual = {
        row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE sql LIKE 'CREATE VIRTUAL TABLE%'")
    }
    for name in names:
        if (
            name in known
            or name in virtual
            or name.startswith("sqlite_")
            or any(name.startswith(f"{v}_") for v in virtual)
        ):
            continue
        quoted = '"' + name.replace('"', '""') + '"'
        for row in connection.execute(f"SELECT * FROM {quoted}"):
            yield name, plain_row(dict(row))


def plain_row(row: dict[str, Any]) -> dict[str, Any]:
    """A row as a tape line can hold it: bytes become hex text."""
    return {key: _plain(value) for key, value in row.items()}


def _plain(value: Any) -> Any:
    """A column value a tape line can hold: bytes become hex text."""
    return value.hex() if isinstance(value, bytes | memoryview) else value
