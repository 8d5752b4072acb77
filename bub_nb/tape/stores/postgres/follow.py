"""Following a tape as another process writes it: ``LISTEN`` on its channel, read what is new.

A channel's name comes from the database, which gives it only to the tape's owner and the teachers of the
owner's class, and a notification carries nothing: what is new is read through row-level security.
"""

from __future__ import annotations

from typing import Protocol

import psycopg
from psycopg import sql

from bub_nb.errors import TapeError
from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.stores.dsn import error_reason
from bub_nb.tape.stores.protocol import StoreStats


class DatabaseTapes(Protocol):
    """What a follower needs of a database store (``PostgresTapeStore`` has it)."""

    dsn: str
    schema: str
    location: str

    def stats(self, tape: str) -> StoreStats: ...

    def owner_and_name(self, tape: str) -> tuple[str, str]: ...

    def read(self, tape: str, start: int = 1, stop: int | None = None) -> list[TapeEntry]: ...


class TapeFollower:
    """New entries of one tape as they are committed, woken by ``NOTIFY`` rather than by polling.

    ``after`` is the last id already seen (default: the tape's end now). A reset starts over at 1.
    """

    def __init__(self, store: DatabaseTapes, tape: str, after: int | None = None) -> None:
        self.store, self.tape = store, tape
        conn = None
        try:
            conn = psycopg.connect(store.dsn, autocommit=True)
            # The database names the channel only for a role that may read the tape (schema version 6).
            query = sql.SQL("SELECT {}.channel(%s, %s)").format(sql.Identifier(store.schema))
            row = conn.execute(query, store.owner_and_name(tape)).fetchone()
            conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(str(row[0] if row else ""))))
        except psycopg.Error as error:
            if conn is not None:
                conn.close()
            raise TapeError(f"Tape {tape!r} cannot be followed at {store.location}: {error_reason(error)}") from None
        self._conn = conn
        self.last_id = store.stats(tape).last_id if after is None else after

    def poll(self, timeout: float = 1.0) -> list[TapeEntry]:
        """Wait up to ``timeout`` seconds for the tape to grow; the entries it gained, oldest first."""
        new = self._catch_up()
        if new:
            return new
        try:
            for _ in self._conn.notifies(timeout=timeout, stop_after=1):
                break
        except psycopg.Error as error:
            raise TapeError(f"Tape {self.tape!r} stopped being followed: {error_reason(error)}") from None
        return self._catch_up()

    def _catch_up(self) -> list[TapeEntry]:
        last = self.store.stats(self.tape).last_id
        if last < self.last_id:  # the tape was reset
            self.last_id = 0
        if last == self.last_id:
            return []
        entries = self.store.read(self.tape, self.last_id + 1)
        if entries:
            self.last_id = entries[-1].id
        return entries

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> TapeFollower:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
