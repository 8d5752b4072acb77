"""The database schema, versioned: each migration is applied once, in order, under a lock.

Version 1 holds tapes and entries; version 2 adds fork lineage, classes and row-level security; version 3
finds a tape by its owner and name and leaves writing entries to functions (``append_path``); version 4 adds
the one function that may rewrite an entry, for redaction (``redaction``); version 5 the same by value, where
only the occurrences of one text are replaced; version 6 gives each tape a channel only its readers can name,
and the class summary archived tapes (``private_channels``).
An entry keeps ``payload`` and ``meta`` as ``jsonb`` for queries and its Bub line as text, because
``jsonb`` reorders keys: what is read back is exactly what was written.
A newer package upgrades an older schema the first time it connects with a role allowed to.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import psycopg
from psycopg import sql

from bub_nb.errors import TapeError
from bub_nb.tape.stores.postgres.append_path import owner_and_append_path
from bub_nb.tape.stores.postgres.class_reads import summary_statements
from bub_nb.tape.stores.postgres.private_channels import private_channel_statements
from bub_nb.tape.stores.postgres.redaction import redaction_statements, text_redaction_statements

_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,40}$")


def check_schema_name(schema: str) -> str:
    if not isinstance(schema, str) or not _SCHEMA_NAME.match(schema):
        raise TapeError(f"Schema name {schema!r} is not allowed: use lower-case letters, digits and '_'")
    return schema


def users_role(schema: str) -> str:
    """The group role whose members may use the tapes in ``schema``."""
    return f"{schema}_users"


def _v1(schema: str) -> list[str]:
    return [
        "CREATE SCHEMA IF NOT EXISTS {s}",
        """CREATE TABLE {s}.tapes (
            key bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            name text NOT NULL,
            owner name NOT NULL DEFAULT current_user,
            notebook text,
            created timestamptz NOT NULL DEFAULT now(),
            updated timestamptz NOT NULL DEFAULT now(),
            archived timestamptz,
            entries bigint NOT NULL DEFAULT 0,
            last_id bigint NOT NULL DEFAULT 0
        )""",
        # One live tape per name; archived tapes keep their name beside it.
        "CREATE UNIQUE INDEX tapes_live_name ON {s}.tapes (name) WHERE archived IS NULL",
        "CREATE INDEX tapes_owner ON {s}.tapes (owner)",
        """CREATE TABLE {s}.entries (
            tape bigint NOT NULL REFERENCES {s}.tapes (key) ON DELETE CASCADE,
            id bigint NOT NULL,
            kind text NOT NULL,
            payload jsonb NOT NULL,
            meta jsonb NOT NULL,
            date text NOT NULL,
            line text NOT NULL,
            PRIMARY KEY (tape, id)
        )""",
        # A tape's anchors, found without touching its other entries (an index-only scan).
        """CREATE INDEX entries_anchors ON {s}.entries
            (tape, id, (CASE WHEN jsonb_typeof(payload -> 'name') = 'string' THEN payload ->> 'name' ELSE '' END))
            WHERE kind = 'anchor'""",
    ]


def _v2(schema: str) -> list[str]:
    group = sql.Identifier(users_role(schema)).as_string(None)
    return [
        """CREATE TABLE {s}.lineage (
            parent text NOT NULL,
            child text NOT NULL,
            from_anchor text,
            from_id bigint NOT NULL,
            date text NOT NULL,
            owner name NOT NULL DEFAULT current_user,
            UNIQUE (parent, child, from_id)
        )""",
        """CREATE TABLE {s}.members (
            class text NOT NULL,
            role name NOT NULL,
            teacher boolean NOT NULL DEFAULT false,
            PRIMARY KEY (class, role)
        )""",
        # Who may read a tape: its owner, or a teacher of a class its owner belongs to. Runs as the
        # schema's owner so students need not read the class lists.
        """CREATE FUNCTION {s}.reads(viewer name, owner name) RETURNS boolean
            LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog AS $$
            SELECT viewer = owner OR EXISTS (
                SELECT 1 FROM {s}.members t JOIN {s}.members m ON m.class = t.class
                WHERE t.role = viewer AND t.teacher AND m.role = owner)
        $$""",
        f"""DO $$ BEGIN
            IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{users_role(schema)}') THEN
                CREATE ROLE {group} NOLOGIN;
            END IF;
        END $$""",
        f"GRANT USAGE ON SCHEMA {{s}} TO {group}",
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON {{s}}.tapes TO {group}",
        # Entries are appended, never changed: not even their owner may update or delete one. A reset
        # deletes the tape's row, and the foreign key takes its entries along.
        f"GRANT SELECT, INSERT ON {{s}}.entries TO {group}",
        f"GRANT SELECT, INSERT ON {{s}}.lineage TO {group}",
        f"GRANT SELECT ON {{s}}.schema_version TO {group}",
        "REVOKE ALL ON FUNCTION {s}.reads(name, name) FROM PUBLIC",
        f"GRANT EXECUTE ON FUNCTION {{s}}.reads(name, name) TO {group}",
        "ALTER TABLE {s}.tapes ENABLE ROW LEVEL SECURITY",
        "ALTER TABLE {s}.entries ENABLE ROW LEVEL SECURITY",
        "ALTER TABLE {s}.lineage ENABLE ROW LEVEL SECURITY",
        "CREATE POLICY read ON {s}.tapes FOR SELECT USING ({s}.reads(current_user, owner))",
        "CREATE POLICY own ON {s}.tapes FOR ALL USING (owner = current_user) WITH CHECK (owner = current_user)",
        """CREATE POLICY read ON {s}.entries FOR SELECT
            USING (EXISTS (SELECT 1 FROM {s}.tapes t WHERE t.key = tape))""",
        """CREATE POLICY own ON {s}.entries FOR ALL
            USING (EXISTS (SELECT 1 FROM {s}.tapes t WHERE t.key = tape AND t.owner = current_user))
            WITH CHECK (EXISTS (SELECT 1 FROM {s}.tapes t WHERE t.key = tape AND t.owner = current_user))""",
        """CREATE POLICY read ON {s}.lineage FOR SELECT
            USING ({s}.reads(current_user, owner))""",
        "CREATE POLICY own ON {s}.lineage FOR INSERT WITH CHECK (owner = current_user)",
    ]


def _v3(schema: str) -> list[str]:
    group = sql.Identifier(users_role(schema)).as_string(None)
    return [*owner_and_append_path(schema, group), *summary_statements(group)]


def _v4(schema: str) -> list[str]:
    return redaction_statements(schema, sql.Identifier(users_role(schema)).as_string(None))


def _v5(schema: str) -> list[str]:
    return text_redaction_statements(schema, sql.Identifier(users_role(schema)).as_string(None))


def _v6(schema: str) -> list[str]:
    return private_channel_statements(sql.Identifier(users_role(schema)).as_string(None))


MIGRATIONS: tuple[Callable[[str], list[str]], ...] = (_v1, _v2, _v3, _v4, _v5, _v6)
VERSION = len(MIGRATIONS)


def schema_version(conn: psycopg.Connection, schema: str) -> int:
    """The version ``schema`` is at; 0 when it does not exist yet."""
    exists = conn.execute("SELECT to_regclass(%s)", (f"{schema}.schema_version",)).fetchone()
    if exists is None or exists[0] is None:
        return 0
    row = conn.execute(sql.SQL("SELECT version FROM {}.schema_version").format(sql.Identifier(schema))).fetchone()
    return int(row[0]) if row else 0


def migrate(conn: psycopg.Connection, schema: str, target: int = VERSION) -> int:
    """Bring ``schema`` up to ``target`` in one transaction; returns the version it was at."""
    check_schema_name(schema)
    ident = sql.Identifier(schema)
    with conn.transaction():
        # One migrator at a time; the others wait and then find the work done.
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"bub_nb schema {schema}",))
        before = schema_version(conn, schema)
        if before >= target:
            return before
        if before == 0:
            conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(ident))
            conn.execute(sql.SQL("CREATE TABLE {}.schema_version (version integer NOT NULL)").format(ident))
            conn.execute(sql.SQL("INSERT INTO {}.schema_version VALUES (0)").format(ident))
        for version in range(before + 1, target + 1):
            for statement in MIGRATIONS[version - 1](schema):
                conn.execute(sql.SQL(statement.replace("{s}", "{schema}")).format(schema=ident))  # type: ignore[arg-type]
            conn.execute(sql.SQL("UPDATE {}.schema_version SET version = %s").format(ident), (version,))
        return before
