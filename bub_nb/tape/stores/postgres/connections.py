"""Connections to a tape database: a pool that is back with the server, and database errors as one line.

psycopg's pool reconnects in the background with a growing delay, so after an outage of a minute its
next try may come long after the server is back. A store that saw the server go away therefore checks
with one direct connection before its next use: a server still down is one line at once, a server that
is back gets a fresh pool, so the first cell after an outage works. The pool's own warnings about
connections it lost are left out of the log; the store says what happened in the error it raises.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import orjson
import psycopg
from psycopg.types.json import set_json_dumps, set_json_loads
from psycopg_pool import ConnectionPool, PoolTimeout

from bub_nb.errors import TapeAccessError, TapeError
from bub_nb.tape._lines import dumps
from bub_nb.tape.stores.dsn import DSN_UNPARSED, error_reason, unencoded_password

POOL_PREFIX = "bub_nb "
_GETCONN_TIMEOUT = 10.0
_FIRST_WAIT = 2.0
_PROBE_TIMEOUT = 5
_LOST = (psycopg.OperationalError, psycopg.InterfaceError, PoolTimeout)
_inside = threading.local()


class _QuietPools(logging.Filter):
    """Drops psycopg pool records that come from a tape store's pool; other pools keep their log."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(_inside, "active", False) or (record.threadName or "").startswith(POOL_PREFIX):
            return False
        return POOL_PREFIX not in record.getMessage()


logging.getLogger("psycopg.pool").addFilter(_QuietPools())


def _configure(conn: psycopg.Connection) -> None:
    set_json_dumps(dumps, conn)
    set_json_loads(orjson.loads, conn)


def check_password_encoded(dsn: str, what: str) -> None:
    """Refuse, before connecting, a URL whose password libpq would split into host, port or database."""
    bad = unencoded_password(dsn)
    if bad is not None:
        raise TapeError(
            f"{what} cannot be used: its password holds {bad!r}, which must be percent-encoded in a URL "
            "(urllib.parse.quote(password, safe=''))"
        )


def probe(dsn: str, location: str) -> None:
    """One direct connection, closed at once; a ``TapeError`` saying why when the server cannot be reached."""
    check_password_encoded(dsn, f"Tape store {location}")
    try:
        psycopg.connect(dsn, connect_timeout=_PROBE_TIMEOUT).close()
    except psycopg.ProgrammingError:  # libpq could not parse the DSN, and would quote part of the password
        raise TapeError(f"Tape store {location} cannot be reached: {DSN_UNPARSED}") from None
    except (psycopg.Error, OSError, ValueError) as error:  # an address libpq parsed oddly fails in name lookup
        raise TapeError(f"Tape store {location} cannot be reached: {error_reason(error)}") from None


class TapePool:
    """The pooled connections of one store, renewed after the server went away and came back."""

    def __init__(self, dsn: str, location: str, size: int) -> None:
        self.dsn, self.location, self.size = dsn, location, max(1, size)
        self._lock = threading.Lock()
        self.lost = False
        probe(dsn, location)  # an unreachable server or a wrong password is one clear line, at once
        self._pool = self._open()

    def _open(self) -> ConnectionPool:
        pool = ConnectionPool(
            self.dsn,
            min_size=1,
            max_size=self.size,
            kwargs={"autocommit": True},
            configure=_configure,
            check=ConnectionPool.check_connection,  # a connection the server dropped is replaced, not handed out
            open=False,
            name=f"{POOL_PREFIX}{self.location}",
        )
        try:
            pool.open(wait=True, timeout=_GETCONN_TIMEOUT)
        except Exception as error:
            pool.close(timeout=0)
            raise TapeError(f"Tape store {self.location} cannot be reached: {error_reason(error)}") from None
        return pool

    def revive(self) -> None:
        """After a lost connection: the server answers again, so start a fresh pool (or say why not)."""
        probe(self.dsn, self.location)
        with self._lock:
            if not self.lost:
                return
            old, self._pool = self._pool, self._open()
            self.lost = False
        _inside.active = True
        try:
            old.close(timeout=1)
        finally:
            _inside.active = False

    def connection(self, tape: str | None) -> _Connection:
        return _Connection(self, tape)

    def close(self) -> None:
        self._pool.close()


class _Connection:
    """A pooled connection whose database errors become one-line ``TapeError``s naming the tape."""

    def __init__(self, pool: TapePool, tape: str | None) -> None:
        self._pool, self._tape = pool, tape
        self._context: Any = None

    def __enter__(self) -> psycopg.Connection:
        if self._pool.lost:
            self._pool.revive()
        _inside.active = True
        try:
            return self._take(_FIRST_WAIT)
        except PoolTimeout:  # a busy pool, or a server gone: one direct try tells which, at once
            try:
                probe(self._pool.dsn, self._pool.location)
            except TapeError:
                self._pool.lost = True
                raise
            try:
                return self._take(_GETCONN_TIMEOUT - _FIRST_WAIT)
            except Exception as error:
                raise self._error(error) from None
        except Exception as error:
            raise self._error(error) from None
        finally:
            _inside.active = False

    def _take(self, timeout: float) -> psycopg.Connection:
        self._context = self._pool._pool.connection(timeout=timeout)
        return self._context.__enter__()  # type: ignore[no-any-return]

    def __exit__(self, kind: Any, error: Any, trace: Any) -> None:
        _inside.active = True
        try:
            self._context.__exit__(kind, error, trace)
        except Exception as closing:  # the connection broke while being handed back
            if error is None:
                raise self._error(closing) from None
        finally:
            _inside.active = False
        if isinstance(error, psycopg.Error | PoolTimeout):
            raise self._error(error) from None

    def _error(self, error: BaseException) -> TapeError:
        what = f"Tape {self._tape!r}" if self._tape else "Tape store"
        if isinstance(error, _LOST):
            self._pool.lost = True
        if isinstance(error, psycopg.errors.InsufficientPrivilege):
            return TapeAccessError(f"{what} is not open to this role at {self._pool.location}; nothing was written")
        if isinstance(error, psycopg.errors.InvalidParameterValue | psycopg.errors.InvalidTextRepresentation):
            return TapeError(f"{what} at {self._pool.location} refused the entries: {error_reason(error)}")
        return TapeError(f"{what} at {self._pool.location} failed: {error_reason(error)}")
