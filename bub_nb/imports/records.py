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


MAX_VALUE: Final = 1 << 22
"""Characters of text, or bytes of a blob, one value of a log's database may bring in; a longer text is cut with a
marker saying how long it was, a longer blob is replaced by such a marker, and the import counts them."""


class LogConnection(sqlite3.Connection):
    """A log's database, read-only, counting the values :func:`rows` cut (``cut``)."""

    cut = 0


def connect(path: Path) -> LogConnection:
    """The database read-only, so an import can never change the log it reads."""
    try:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, factory=LogConnection)
        connection.row_factory = sqlite3.Row
        connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        raise LogImportError(f"Log {str(path)!r} is not a readable SQLite database: {exc}") from exc
    return connection


def table_names(path: Path) -> set[str]:
    with closing(connect(path)) as connection:
        return {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def rows(connection: sqlite3.Connection, sql: str, *params: Any) -> list[dict[str, Any]]:
    """The rows ``sql`` selects, each value bounded by :data:`MAX_VALUE` in SQL, before Python holds it."""
    return list(capped_rows(connection, sql, params))


def capped_rows(connection: sqlite3.Connection, sql: str, params: tuple[Any, ...] = ()) -> Iterator[dict[str, Any]]:
    """``sql``'s rows with every text or blob longer than :data:`MAX_VALUE` cut by SQLite itself (``substr``,
    ``length``): a generated ``zeroblob(400000000)`` column is never made into bytes. Each cut value is counted
    on a :class:`LogConnection`."""
    names = [column[0] for column in connection.execute(f"SELECT * FROM ({sql}) LIMIT 0", params).description]
    picks, lengths = [], []
    for number, name in enumerate(names):
        column = '"' + name.replace('"', '""') + '"'
        over = f"length({column}) > {MAX_VALUE}"
        picks.append(
            f"CASE WHEN {over} THEN (CASE typeof({column}) WHEN 'text' THEN substr({column}, 1, {MAX_VALUE}) END) "
            f"ELSE {column} END AS {column}"
        )
        lengths.append(f'CASE WHEN {over} THEN length({column}) END AS "_bub_cut_{number}"')
    body = sql.strip()
    # A plain "SELECT * FROM ..." keeps its own ORDER BY; anything else is read through a subquery.
    source = body[len("SELECT *") :] if body.upper().startswith("SELECT * FROM") else f" FROM ({body})"
    query = f"SELECT {', '.join(picks + lengths)}{source}"
    for row in connection.execute(query, params):
        values = tuple(row)
        found = dict(zip(names, values[: len(names)], strict=True))
        for number, length in enumerate(values[len(names) :]):
            if length is None:
                continue
            name = names[number]
            kept = found[name]
            note = (
                f"[cut: {length:,} {'characters' if isinstance(kept, str) else 'bytes'} in the log, over {MAX_VALUE:,}]"
            )
            found[name] = f"{kept}…{note}" if isinstance(kept, str) else note
            if isinstance(connection, LogConnection):
                connection.cut += 1
        yield found


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
        for row in capped_rows(connection, f"SELECT * FROM {quoted}"):
            yield name, plain_row(row)


def plain_row(row: dict[str, Any]) -> dict[str, Any]:
    """A row as a tape line can hold it: bytes become hex text."""
    return {key: _plain(value) for key, value in row.items()}


def _plain(value: Any) -> Any:
    """A column value a tape line can hold: bytes become hex text."""
    return value.hex() if isinstance(value, bytes | memoryview) else value
