"""Who sees what: setting a database up for a class, and enrolling students and teachers.

Row-level security does the work: a role reads and writes the tapes it owns, and a teacher of a
class also reads the tapes of every member of that class. These functions run as the database's owner.
"""

from __future__ import annotations

from collections.abc import Iterable

import psycopg
from psycopg import sql

from bub_nb.errors import TapeError
from bub_nb.tape.stores.dsn import error_reason, redact_dsn, remember_dsn_secrets
from bub_nb.tape.stores.postgres.connections import check_password_encoded
from bub_nb.tape.stores.postgres.schema import VERSION, check_schema_name, migrate, users_role


def _connect(dsn: str) -> psycopg.Connection:
    remember_dsn_secrets(dsn)
    check_password_encoded(dsn, f"Database {redact_dsn(dsn)}")
    try:
        return psycopg.connect(dsn, autocommit=True)
    except (psycopg.Error, OSError, ValueError) as error:
        raise TapeError(f"Database {redact_dsn(dsn)} cannot be reached: {error_reason(error)}") from None


def _line(error: BaseException) -> str:
    return redact_dsn(str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__)


def init_database(dsn: str, *, schema: str = "bub_nb") -> tuple[int, int]:
    """Create or upgrade ``schema`` with its tables, group role and row-level security; (from, to) versions."""
    check_schema_name(schema)
    with _connect(dsn) as conn:
        try:
            before = migrate(conn, schema)
        except psycopg.Error as error:
            raise TapeError(f"Schema {schema!r} at {redact_dsn(dsn)} cannot be set up: {_line(error)}") from None
    return before, VERSION


def enroll(dsn: str, class_name: str, roles: Iterable[str], *, teacher: bool = False, schema: str = "bub_nb") -> None:
    """Let existing database ``roles`` use the tapes, as students (or teachers) of ``class_name``."""
    check_schema_name(schema)
    if not class_name.strip():
        raise TapeError("A class needs a name")
    with _connect(dsn) as conn, conn.transaction():
        for role in roles:
            try:
                conn.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(users_role(schema)), sql.Identifier(role)))
                conn.execute(
                    sql.SQL(
                        "INSERT INTO {}.members (class, role, teacher) VALUES (%s, %s, %s) "
                        "ON CONFLICT (class, role) DO UPDATE SET teacher = EXCLUDED.teacher"
                    ).format(sql.Identifier(schema)),
                    (class_name, role, teacher),
                )
            except psycopg.Error as error:
                raise TapeError(f"Role {role!r} cannot join class {class_name!r}: {_line(error)}") from None
