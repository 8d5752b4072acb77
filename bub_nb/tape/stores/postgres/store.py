"""``PostgresTapeStore``: tapes shared by a class or a team in one PostgreSQL database.

Ids are assigned inside the insert's transaction from a counter on the tape's row: the row lock
orders concurrent writers, and a rolled-back transaction rolls its ids back with it, so ids stay
gap-free, increasing and never reused. Every append is one transaction, so a crash or a lost
connection leaves either the whole batch or none of it.
"""

from __future__ import annotations

import itertools
import threading
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

import orjson
import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb, set_json_dumps, set_json_loads
from psycopg_pool import ConnectionPool, PoolTimeout

from bub_nb.errors import TapeAccessError, TapeError
from bub_nb.tape._lines import Record, decode_records, dumps, gc_paused
from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.locations import current_notebook
from bub_nb.tape.names import check_file_name
from bub_nb.tape.stores.dsn import error_reason, redact_dsn
from bub_nb.tape.stores.postgres.follow import TapeFollower
from bub_nb.tape.stores.postgres.schema import VERSION, channel, check_schema_name, migrate, schema_version
from bub_nb.tape.stores.protocol import AnchorList, AnchorRef, StoreStats

_REVERSE_BATCH = 500
_COPY_FROM = 64  # batches this large go in with COPY, smaller ones as one multi-row INSERT
_ANCHOR_NAME = "CASE WHEN jsonb_typeof(payload -> 'name') = 'string' THEN payload ->> 'name' ELSE '' END"


def _configure(conn: psycopg.Connection) -> None:
    set_json_dumps(dumps, conn)
    set_json_loads(orjson.loads, conn)


class PostgresTapeStore:
    """Tapes in the ``schema`` of one PostgreSQL database, behind the ``TapeStore`` protocol."""

    def __init__(self, dsn: str, *, schema: str = "bub_nb", pool_size: int = 4, migrate_schema: bool = True) -> None:
        self.dsn = dsn
        self.schema = check_schema_name(schema)
        self.location = redact_dsn(dsn)
        self._s = sql.Identifier(schema)
        self._anchor_cache: dict[int, tuple[list[int], list[str]]] = {}
        self._lock = threading.Lock()
        try:  # one direct try first: an unreachable server or a wrong password is one clear line, at once
            psycopg.connect(dsn, connect_timeout=10).close()
        except psycopg.Error as error:
            raise TapeError(f"Tape store {self.location} cannot be reached: {error_reason(error)}") from None
        self._pool = ConnectionPool(
            dsn,
            min_size=1,
            max_size=max(1, pool_size),
            kwargs={"autocommit": True},
            configure=_configure,
            check=ConnectionPool.check_connection,  # a restarted server: reconnect, not a stale error
            open=False,
            name=f"bub_nb {self.location}",
        )
        try:
            self._pool.open(wait=True, timeout=10)
        except Exception as error:
            self._pool.close()
            raise TapeError(f"Tape store {self.location} cannot be reached: {error_reason(error)}") from None
        self._ensure_schema(migrate_schema)

    def __repr__(self) -> str:
        return f"PostgresTapeStore({self.location!r}, schema={self.schema!r})"

    def close(self) -> None:
        self._pool.close()

    def __enter__(self) -> PostgresTapeStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _ensure_schema(self, allowed: bool) -> None:
        with self._connect("open") as conn:
            version = schema_version(conn, self.schema)
            if version >= VERSION:
                return
            if not allowed:
                raise TapeError(f"Schema {self.schema!r} at {self.location} is at version {version}, not {VERSION}")
            try:
                migrate(conn, self.schema)
            except psycopg.errors.InsufficientPrivilege:
                raise TapeError(
                    f"Schema {self.schema!r} at {self.location} is at version {version} and this role cannot "
                    f"upgrade it to {VERSION}; run `bub-nb db init` as the database's owner"
                ) from None

    # -- connections and errors -------------------------------------------------------------------

    def _connect(self, tape: str | None) -> Any:
        return _Connection(self, tape)

    def _q(self, text: str) -> sql.Composed:
        return sql.SQL(text).format(s=self._s)

    def _live(self, conn: psycopg.Connection, tape: str) -> tuple[int, int, int] | None:
        """The tape's (key, entries, last_id), or ``None`` when it does not exist (or is not ours to see)."""
        row = conn.execute(
            self._q("SELECT key, entries, last_id FROM {s}.tapes WHERE name = %s AND archived IS NULL"), (tape,)
        ).fetchone()
        return (int(row[0]), int(row[1]), int(row[2])) if row else None

    # -- the TapeStore protocol -------------------------------------------------------------------

    def list_tapes(self) -> list[str]:
        with self._connect(None) as conn:
            rows = conn.execute(
                self._q("SELECT name FROM {s}.tapes WHERE archived IS NULL AND entries > 0 ORDER BY name")
            ).fetchall()
        return [row[0] for row in rows]

    def exists(self, tape: str) -> bool:
        with self._connect(tape) as conn:
            live = self._live(conn, tape)
        return live is not None and live[1] > 0

    def append(self, tape: str, entries: Sequence[TapeEntry]) -> list[TapeEntry]:
        if not entries:
            return []
        if len(entries) >= _COPY_FROM:
            return self._write(tape, [(0, e) for e in entries])
        check_file_name(tape)
        query, params = self._append_statement(tape, entries)
        with self._connect(tape) as conn:
            row = conn.execute(query, params).fetchone()
            if row is None:  # a new tape: make its row, then append
                conn.execute(
                    self._q(
                        "INSERT INTO {s}.tapes (name, notebook) VALUES (%s, %s) "
                        "ON CONFLICT (name) WHERE archived IS NULL DO NOTHING"
                    ),
                    (tape, _notebook_of(tape)),
                )
                row = conn.execute(query, params).fetchone()
            if row is None:
                raise TapeAccessError(f"Tape {tape!r} belongs to another role; nothing was written")
        return [entry.with_id(int(row[0]) + n) for n, entry in enumerate(entries, start=1)]

    def _append_statement(self, tape: str, entries: Sequence[TapeEntry]) -> tuple[sql.Composed, list[Any]]:
        """One statement, so one round trip and its own transaction: take ids from the tape's counter
        (its row lock orders concurrent writers), insert the entries, and wake the followers."""
        count = len(entries)
        values = sql.SQL(", ").join([sql.SQL("(%s::int, %s, %s::jsonb, %s::jsonb, %s, %s)")] * count)
        query = self._q(
            "WITH t AS (UPDATE {s}.tapes SET last_id = last_id + %s, entries = entries + %s, updated = now() "
            "WHERE name = %s AND archived IS NULL RETURNING key, last_id - %s AS base), "
            "e AS (INSERT INTO {s}.entries (tape, id, kind, payload, meta, date, line) "
            "SELECT t.key, t.base + v.ord, v.kind, v.payload, v.meta, v.date, "
            "'{{\"id\":' || (t.base + v.ord) || substr(v.line, 8) "  # the line was made with "id":0
            "FROM t CROSS JOIN (VALUES "
        )
        query = query + values + sql.SQL(") AS v (ord, kind, payload, meta, date, line)) SELECT base, ")
        query = query + sql.SQL("pg_notify(%s, (base + %s)::text) FROM t")
        params: list[Any] = [count, count, tape, count]
        for n, e in enumerate(entries, start=1):
            params += [n, e.kind, Jsonb(e.payload), Jsonb(e.meta), e.date, _line(e.with_id(0))]
        params += [channel(self.schema, tape), count]
        return query, params

    def import_entries(self, tape: str, entries: Sequence[TapeEntry], *, notebook: str | None = None) -> int:
        """Copy entries with their own ids (a tape moving in from files); only ids past the last are taken."""
        return len(self._write(tape, [(e.id, e) for e in entries], keep_ids=True, notebook=notebook))

    def _write(
        self, tape: str, items: list[tuple[int, TapeEntry]], *, keep_ids: bool = False, notebook: str | None = None
    ) -> list[TapeEntry]:
        check_file_name(tape)  # the same names a file store takes, so tapes move both ways
        with self._connect(tape) as conn, conn.transaction():
            conn.execute(
                self._q(
                    "INSERT INTO {s}.tapes (name, notebook) VALUES (%s, %s) "
                    "ON CONFLICT (name) WHERE archived IS NULL DO NOTHING"
                ),
                (tape, notebook or _notebook_of(tape)),
            )
            # The row lock taken here orders every writer of this tape until the commit.
            row = conn.execute(
                self._q(
                    "UPDATE {s}.tapes SET updated = now() WHERE name = %s AND archived IS NULL RETURNING key, last_id"
                ),
                (tape,),
            ).fetchone()
            if row is None:
                raise TapeAccessError(f"Tape {tape!r} belongs to another role; nothing was written")
            key, last_id = int(row[0]), int(row[1])
            if keep_ids:
                stored = [e.with_id(i) for i, e in items if i > last_id]
                if any(b.id <= a.id for a, b in itertools.pairwise(stored)):
                    raise TapeError(f"Tape {tape!r}: entries to copy are not in increasing id order")
            else:
                stored = [e.with_id(last_id + n) for n, (_, e) in enumerate(items, start=1)]
            if not stored:
                return []
            self._insert(conn, key, stored)
            conn.execute(
                self._q("UPDATE {s}.tapes SET entries = entries + %s, last_id = %s WHERE key = %s"),
                (len(stored), stored[-1].id, key),
            )
            conn.execute("SELECT pg_notify(%s, %s)", (channel(self.schema, tape), str(stored[-1].id)))
        return stored

    def _insert(self, conn: psycopg.Connection, key: int, stored: list[TapeEntry]) -> None:
        if len(stored) >= _COPY_FROM:
            with conn.cursor().copy(
                self._q("COPY {s}.entries (tape, id, kind, payload, meta, date, line) FROM STDIN")
            ) as copy:
                for e in stored:
                    copy.write_row((key, e.id, e.kind, Jsonb(e.payload), Jsonb(e.meta), e.date, _line(e)))
            return
        values = sql.SQL(", ").join([sql.SQL("(%s, %s, %s, %s, %s, %s, %s)")] * len(stored))
        params: list[Any] = []
        for e in stored:
            params += [key, e.id, e.kind, Jsonb(e.payload), Jsonb(e.meta), e.date, _line(e)]
        conn.execute(
            sql.SQL("INSERT INTO {}.entries (tape, id, kind, payload, meta, date, line) VALUES ").format(self._s)
            + values,
            params,
        )

    def records(self, tape: str, start: int = 1, stop: int | None = None) -> list[Record]:
        """Entries with ``start <= id < stop`` as decoded ``{id, kind, payload, meta, date}`` dicts."""
        if stop is not None and stop <= start:
            return []
        with self._connect(tape) as conn:
            live = self._live(conn, tape)
            if live is None or start > live[2]:
                return []
            rows = conn.execute(
                self._q("SELECT line FROM {s}.entries WHERE tape = %s AND id >= %s AND id < %s ORDER BY id"),
                (live[0], start, stop if stop is not None else live[2] + 1),
            ).fetchall()
        with gc_paused():
            return [r for r in decode_records([row[0].encode() for row in rows]) if r is not None]

    def read(self, tape: str, start: int = 1, stop: int | None = None) -> list[TapeEntry]:
        records = self.records(tape, start, stop)
        return [TapeEntry.of_record(record) for record in records]

    def iter_reverse(self, tape: str) -> Iterator[TapeEntry]:
        with self._connect(tape) as conn:
            live = self._live(conn, tape)
        if live is None:
            return
        below = live[2] + 1
        while below > 1:
            batch = self.read(tape, max(1, below - _REVERSE_BATCH), below)
            if not batch:
                return
            yield from reversed(batch)
            below = batch[0].id

    def anchors(self, tape: str) -> Sequence[AnchorRef]:
        with self._connect(tape) as conn:
            live = self._live(conn, tape)
            if live is None:
                return ()
            key = live[0]
            with self._lock:
                ids, names = self._anchor_cache.get(key, ([], []))
            after = ids[-1] if ids else 0
            rows = conn.execute(
                self._q(
                    f"SELECT id, {_ANCHOR_NAME} FROM {{s}}.entries "
                    "WHERE tape = %s AND kind = 'anchor' AND id > %s AND id <= %s ORDER BY id"
                ),
                (key, after, live[2]),
            ).fetchall()
        with self._lock:
            ids, names = self._anchor_cache.setdefault(key, ([], []))
            for entry_id, name in rows:
                if not ids or entry_id > ids[-1]:
                    ids.append(int(entry_id))
                    names.append(name)
            length = bisect_right(ids, live[2])
            return AnchorList(ids, names, length)

    def stats(self, tape: str) -> StoreStats:
        with self._connect(tape) as conn:
            live = self._live(conn, tape)
        entries, last_id = (live[1], live[2]) if live else (0, 0)
        return StoreStats(entries, last_id, location=f"{self.location}#{self.schema}/{tape}")

    def reset(self, tape: str, *, archive: bool = False) -> str | None:
        with self._connect(tape) as conn, conn.transaction():
            row = conn.execute(
                self._q("SELECT key FROM {s}.tapes WHERE name = %s AND archived IS NULL FOR UPDATE"), (tape,)
            ).fetchone()
            if row is None:
                return None
            stamp = datetime.now(UTC)
            if archive:
                done = conn.execute(self._q("UPDATE {s}.tapes SET archived = %s WHERE key = %s"), (stamp, row[0]))
            else:
                done = conn.execute(self._q("DELETE FROM {s}.tapes WHERE key = %s"), (row[0],))
            if done.rowcount != 1:
                raise TapeAccessError(f"Tape {tape!r} belongs to another role; it was not reset")
            conn.execute("SELECT pg_notify(%s, %s)", (channel(self.schema, tape), "reset"))
        if not archive:
            return None
        return f"{self.location}#{self.schema}/{tape}@{stamp.strftime('%Y%m%dT%H%M%S.%fZ')}"

    # -- what only a database has ---------------------------------------------------------------

    def tape_details(self) -> dict[str, dict[str, Any]]:
        """Each live tape this role may see: its owner, notebook, creation and last write."""
        with self._connect(None) as conn:
            rows = conn.execute(
                self._q(
                    "SELECT name, owner, notebook, created, updated, entries, last_id FROM {s}.tapes "
                    "WHERE archived IS NULL AND entries > 0 ORDER BY name"
                )
            ).fetchall()
        keys = ("owner", "notebook", "created", "updated", "entries", "last_id")
        return {row[0]: dict(zip(keys, row[1:], strict=True)) for row in rows}

    def record_lineage(self, record: dict[str, Any]) -> None:
        """Keep one fork's lineage (parent, child, from_anchor, from_id, date); a known one is kept once."""
        with self._connect(record.get("child")) as conn:
            conn.execute(
                self._q(
                    "INSERT INTO {s}.lineage (parent, child, from_anchor, from_id, date) VALUES (%s, %s, %s, %s, %s) "
                    "ON CONFLICT DO NOTHING"
                ),
                (record["parent"], record["child"], record.get("from_anchor"), record["from_id"], record["date"]),
            )

    def lineage(self) -> list[dict[str, Any]]:
        with self._connect(None) as conn:
            cursor = conn.cursor(row_factory=psycopg.rows.dict_row)
            rows = cursor.execute(
                self._q("SELECT parent, child, from_anchor, from_id, date FROM {s}.lineage ORDER BY date, child")
            ).fetchall()
        return [dict(row) for row in rows]

    def follow(self, tape: str, after: int | None = None) -> TapeFollower:
        """A ``TapeFollower`` that waits for ``NOTIFY`` and hands over what ``tape`` gained."""
        return TapeFollower(self, tape, after)


def _line(entry: TapeEntry) -> str:
    """The entry as Bub's line, without its line break."""
    return entry.to_line()[:-1].decode("utf-8", "surrogatepass")


def _notebook_of(tape: str) -> str | None:
    """The notebook this kernel runs, when ``tape`` is that notebook's tape."""
    notebook = current_notebook()
    if notebook.source == "cwd" or notebook.tape_name != tape:
        return None
    return str(notebook.workspace / notebook.session_id)


class _Connection:
    """A pooled connection whose database errors become one-line ``TapeError``s naming the tape."""

    def __init__(self, store: PostgresTapeStore, tape: str | None) -> None:
        self._store, self._tape = store, tape
        self._context: Any = None

    def __enter__(self) -> psycopg.Connection:
        try:
            self._context = self._store._pool.connection(timeout=10)
            return self._context.__enter__()  # type: ignore[no-any-return]
        except Exception as error:
            raise self._error(error) from None

    def __exit__(self, kind: Any, error: Any, trace: Any) -> None:
        try:
            self._context.__exit__(kind, error, trace)
        except Exception as closing:  # the connection broke while being handed back
            if error is None:
                raise self._error(closing) from None
        if isinstance(error, psycopg.Error | PoolTimeout):
            raise self._error(error) from None

    def _error(self, error: BaseException) -> TapeError:
        what = f"Tape {self._tape!r}" if self._tape else "Tape store"
        if isinstance(error, psycopg.errors.InsufficientPrivilege):
            return TapeAccessError(f"{what} is not open to this role at {self._store.location}; nothing was written")
        return TapeError(f"{what} at {self._store.location} failed: {error_reason(error)}")
