"""``PostgresTapeStore``: tapes shared by a class or a team in one PostgreSQL database.

A tape is found by its owner and its name, so two people whose notebooks share a path get two tapes.
A plain name is one of this role's own tapes; another role's tape, as a teacher reads it, is
``owner/name`` (``/`` never occurs in a tape's name). Entries are written only by the schema's
functions (``append_path``), which take ids from a counter on the tape's row inside the insert's
transaction: ids stay gap-free, increasing and never reused, and an append is all of its batch or none.
"""

from __future__ import annotations

import threading
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from psycopg import sql

from bub_nb.errors import TapeAccessError, TapeError
from bub_nb.tape._lines import Record, decode_records, dumps, gc_paused
from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.names import check_file_name
from bub_nb.tape.stores.dsn import redact_dsn, remember_dsn_secrets
from bub_nb.tape.stores.postgres import class_reads
from bub_nb.tape.stores.postgres.connections import TapePool
from bub_nb.tape.stores.postgres.follow import TapeFollower
from bub_nb.tape.stores.postgres.schema import VERSION, check_schema_name, migrate, schema_version
from bub_nb.tape.stores.protocol import AnchorList, AnchorRef, StoreStats

_REVERSE_BATCH = 500
_BATCH = 1_000  # entries per call of the append functions
_ANCHOR_NAME = "CASE WHEN jsonb_typeof(payload -> 'name') = 'string' THEN payload ->> 'name' ELSE '' END"


class PostgresTapeStore:
    """Tapes in the ``schema`` of one PostgreSQL database, behind the ``TapeStore`` protocol."""

    def __init__(self, dsn: str, *, schema: str = "bub_nb", pool_size: int = 4, migrate_schema: bool = True) -> None:
        remember_dsn_secrets(dsn)
        self.dsn = dsn
        self.schema = check_schema_name(schema)
        self.location = redact_dsn(dsn)
        self._s = sql.Identifier(schema)
        self._anchor_cache: dict[int, tuple[list[int], list[str]]] = {}
        self._notebooks: dict[str, str] = {}
        self._lock = threading.Lock()
        self._pool = TapePool(dsn, self.location, pool_size)
        self._ensure_schema(migrate_schema)
        with self.connection(None) as conn:
            row = conn.execute("SELECT session_user").fetchone()
        self.role: str = str(row[0]) if row else ""

    def __repr__(self) -> str:
        return f"PostgresTapeStore({self.location!r}, schema={self.schema!r})"

    def close(self) -> None:
        self._pool.close()

    def __enter__(self) -> PostgresTapeStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _ensure_schema(self, allowed: bool) -> None:
        import psycopg

        with self.connection("open") as conn:
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

    # -- names, connections -----------------------------------------------------------------------

    def owner_and_name(self, tape: str) -> tuple[str, str]:
        """``(owner, name)`` of ``tape``: ``owner/name``, or a plain name of this role's own."""
        owner, slash, name = tape.partition("/")
        return (owner, name) if slash and owner and "/" not in name else (self.role, tape)

    def display_name(self, owner: str, name: str) -> str:
        """How this role names a tape: plainly when it is its own, ``owner/name`` otherwise."""
        return name if owner == self.role else f"{owner}/{name}"

    def note_notebook(self, tape: str, notebook: str) -> None:
        """Record which notebook writes ``tape`` when its row is made (the caller knows the notebook)."""
        self._notebooks[tape] = notebook

    def connection(self, tape: str | None) -> Any:
        """A pooled connection whose database errors are one-line ``TapeError``s naming ``tape``."""
        return self._pool.connection(tape)

    @contextmanager
    def notebook_lock(self, tape: str) -> Iterator[None]:
        """A session advisory lock on the notebook's owner and name, held on a connection of its own while one
        kernel checks who holds the conversation and writes a handoff: every kernel of the class takes the same."""
        owner, name = self.owner_and_name(tape)
        key = f"{self.schema}/notebook/{owner}/{name}"
        with self.connection(tape) as conn:
            conn.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", (key,))
            try:
                yield
            finally:
                conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (key,))

    def query(self, text: str) -> sql.Composed:
        """``text`` with ``{s}`` standing for the schema."""
        return sql.SQL(text).format(s=self._s)

    def _live(self, conn: Any, tape: str) -> tuple[int, int, int] | None:
        """The tape's (key, entries, last_id), or ``None`` when it does not exist (or is not ours to see)."""
        owner, name = self.owner_and_name(tape)
        row = conn.execute(
            self.query(
                "SELECT key, entries, last_id FROM {s}.tapes WHERE owner = %s AND name = %s AND archived IS NULL"
            ),
            (owner, name),
        ).fetchone()
        return (int(row[0]), int(row[1]), int(row[2])) if row else None

    def _own_name(self, tape: str) -> str:
        """The plain name of a tape this role may write; another role's tape is refused, nothing written."""
        owner, name = self.owner_and_name(tape)
        if owner != self.role:
            raise TapeAccessError(f"Tape {tape!r} belongs to another role; nothing was written")
        return check_file_name(name)  # the same names a file store takes, so tapes move both ways

    # -- the TapeStore protocol -------------------------------------------------------------------

    def list_tapes(self) -> list[str]:
        with self.connection(None) as conn:
            rows = conn.execute(
                self.query("SELECT owner, name FROM {s}.tapes WHERE archived IS NULL AND entries > 0")
            ).fetchall()
        return sorted(self.display_name(owner, name) for owner, name in rows)

    def exists(self, tape: str) -> bool:
        with self.connection(tape) as conn:
            live = self._live(conn, tape)
        return live is not None and live[1] > 0

    def append(self, tape: str, entries: Sequence[TapeEntry]) -> list[TapeEntry]:
        """Append through the schema's function: the database assigns each entry's id and date."""
        if not entries:
            return []
        name = self._own_name(tape)
        stored: list[TapeEntry] = []
        with self.connection(tape) as conn, conn.transaction():
            for start in range(0, len(entries), _BATCH):
                batch = entries[start : start + _BATCH]
                row = conn.execute(
                    self.query("SELECT first_id, stamped FROM {s}.append_entries(%s, %s, %s, %s, %s)"),
                    (name, [e.kind for e in batch], *_texts(batch), self._notebooks.get(name)),
                ).fetchone()
                if row is None or row[0] is None:
                    raise TapeAccessError(f"Tape {tape!r} cannot be written by this role; nothing was written")
                first, date = int(row[0]), str(row[1])
                stored += [TapeEntry(first + n, e.kind, e.payload, e.meta, date) for n, e in enumerate(batch)]
        return stored

    def import_entries(self, tape: str, entries: Sequence[TapeEntry], *, notebook: str | None = None) -> int:
        """Copy entries with their own ids and dates (a tape moving in from files); the ids past the last."""
        name = self._own_name(tape)
        with self.connection(tape) as conn, conn.transaction():
            live = self._live(conn, name)
            new = [e for e in entries if e.id > (live[2] if live else 0)]
            for start in range(0, len(new), _BATCH):
                batch = new[start : start + _BATCH]
                conn.execute(
                    self.query("SELECT {s}.import_entries(%s, %s, %s, %s, %s, %s, %s)"),
                    (name, batch[0].id, [e.kind for e in batch], *_texts(batch), [e.date for e in batch], notebook),
                )
        return len(new)

    def records(self, tape: str, start: int = 1, stop: int | None = None) -> list[Record]:
        """Entries with ``start <= id < stop`` as decoded ``{id, kind, payload, meta, date}`` dicts."""
        if stop is not None and stop <= start:
            return []
        with self.connection(tape) as conn:
            live = self._live(conn, tape)
            if live is None or start > live[2]:
                return []
            rows = conn.execute(
                self.query("SELECT line FROM {s}.entries WHERE tape = %s AND id >= %s AND id < %s ORDER BY id"),
                (live[0], start, stop if stop is not None else live[2] + 1),
            ).fetchall()
        with gc_paused():
            return [r for r in decode_records([row[0].encode() for row in rows]) if r is not None]

    def read(self, tape: str, start: int = 1, stop: int | None = None) -> list[TapeEntry]:
        return [TapeEntry.of_record(record) for record in self.records(tape, start, stop)]

    def iter_reverse(self, tape: str) -> Iterator[TapeEntry]:
        with self.connection(tape) as conn:
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
        with self.connection(tape) as conn:
            live = self._live(conn, tape)
            if live is None:
                return ()
            key = live[0]
            with self._lock:
                ids, names = self._anchor_cache.get(key, ([], []))
            after = ids[-1] if ids else 0
            rows = conn.execute(
                self.query(
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
        with self.connection(tape) as conn:
            live = self._live(conn, tape)
        entries, last_id = (live[1], live[2]) if live else (0, 0)
        return StoreStats(entries, last_id, location=f"{self.location}#{self.schema}/{tape}")

    def reset(self, tape: str, *, archive: bool = False) -> str | None:
        """Start ``tape`` over. On a database the old tape is always kept, archived, where teachers read it."""
        owner, name = self.owner_and_name(tape)
        if owner != self.role:
            raise TapeAccessError(f"Tape {tape!r} belongs to another role; it was not reset")
        with self.connection(tape) as conn:
            row = conn.execute(self.query("SELECT {s}.archive_tape(%s)"), (name,)).fetchone()
        if row is None or row[0] is None:
            return None
        return f"{self.location}#{self.schema}/{tape}@{row[0].strftime('%Y%m%dT%H%M%S.%fZ')}"

    # -- what only a database has ---------------------------------------------------------------

    def tape_details(self) -> dict[str, dict[str, Any]]:
        """Each live tape this role may see: its owner, notebook, creation and last write."""
        return class_reads.tape_details(self)

    def class_lines(
        self, kinds: Sequence[str] = (), since: Any = None, *, archives: bool = False
    ) -> list[tuple[str, bool, str | None, list[bytes]]]:
        """The lines of every tape this role reads, picked in one query (``class_reads.class_lines``)."""
        return class_reads.class_lines(self, kinds, since, archives=archives)

    def overview_rows(self) -> list[dict[str, Any]]:
        """One summary per live tape, counted by the database: what ``class_overview`` shows."""
        return class_reads.overview_rows(self)

    def record_lineage(self, record: dict[str, Any]) -> None:
        """Keep one fork's lineage (parent, child, from_anchor, from_id, date, replay); a known one is kept once."""
        class_reads.record_lineage(self, record)

    def lineage(self) -> list[dict[str, Any]]:
        return class_reads.lineage(self)

    def follow(self, tape: str, after: int | None = None) -> TapeFollower:
        """A ``TapeFollower`` that waits for ``NOTIFY`` and hands over what ``tape`` gained."""
        return TapeFollower(self, tape, after)


def _texts(entries: Sequence[TapeEntry]) -> tuple[list[str], list[str]]:
    """Payloads and metas as the JSON text a tape line holds, so the database's line is Bub's."""
    return (
        [dumps(e.payload).decode("utf-8", "surrogatepass") for e in entries],
        [dumps(e.meta).decode("utf-8", "surrogatepass") for e in entries],
    )
