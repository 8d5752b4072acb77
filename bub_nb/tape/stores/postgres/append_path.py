"""Schema version 3: a tape is found by its owner and name, and only these functions write entries.

The functions run as the schema's owner (``SECURITY DEFINER``) for the role that logged in
(``session_user``). They check every entry, take ids from the tape's counter, date the entries with the
server's clock and build each stored Bub line themselves, so a role that may call them, from bub_nb or
from ``psql``, cannot write an entry with an id, kind, date or line of its own choosing. Roles keep
``SELECT`` on the tables and lose ``INSERT``, ``UPDATE`` and ``DELETE``.
"""

from __future__ import annotations

from psycopg import sql

from bub_nb.tape.entries import KINDS
from bub_nb.tape.names import MAX_NAME_BYTES

# A date pushed from a file must look like the ones bub_nb and Bub write (ISO 8601); PostgreSQL alone
# would also take words such as 'now', 'epoch' or 'infinity'.
_ISO_DATE = r"^\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d{1,9})?(Z|[+-]\d\d(:?\d\d)?)?$"
_IMPORT_ARGUMENTS = "text, bigint, text[], text[], text[], text[], text"


def _literal(value: object) -> str:
    return sql.Literal(value).as_string(None)


def owner_and_append_path(schema: str, group: str) -> list[str]:
    """The statements of this step for ``schema``, granting to the (quoted) ``group`` role."""
    kinds = ", ".join(_literal(kind) for kind in KINDS)
    # Literal braces are doubled: each statement is formatted with the schema's name.
    prefix = _literal(f"{schema}.")
    return [
        "DROP INDEX {s}.tapes_live_name",
        "CREATE UNIQUE INDEX tapes_live_owner_name ON {s}.tapes (owner, name) WHERE archived IS NULL",
        "ALTER TABLE {s}.entries ADD COLUMN pushed boolean NOT NULL DEFAULT false",
        "ALTER TABLE {s}.lineage ADD COLUMN replay text",
        "ALTER TABLE {s}.lineage DROP CONSTRAINT lineage_parent_child_from_id_key",
        "ALTER TABLE {s}.lineage ADD CONSTRAINT lineage_owner_fork UNIQUE (owner, parent, child, from_id)",
        f"""CREATE FUNCTION {{s}}.channel(owner name, tape text) RETURNS text
            LANGUAGE sql IMMUTABLE SET search_path = pg_catalog AS $$
            SELECT 'bub_' || left(md5({prefix} || owner || '/' || tape), 32)
        $$""",
        # Every entry checked before anything is written: a known kind, JSON objects on one line each.
        f"""CREATE FUNCTION {{s}}.check_entries(tape_name text, kinds text[], payloads text[], metas text[])
            RETURNS integer LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog AS $$
            DECLARE n integer := coalesce(cardinality(kinds), 0); bad text;
            BEGIN
                IF tape_name IS NULL OR tape_name IN ('', '.', '..') OR strpos(tape_name, '/') > 0
                        OR strpos(tape_name, chr(92)) > 0 OR octet_length(tape_name) > {MAX_NAME_BYTES} THEN
                    RAISE EXCEPTION 'Tape name % cannot name a tape', quote_literal(coalesce(tape_name, ''))
                        USING ERRCODE = '22023';
                END IF;
                IF n = 0 OR cardinality(payloads) IS DISTINCT FROM n OR cardinality(metas) IS DISTINCT FROM n THEN
                    RAISE EXCEPTION 'An append needs one kind, payload and meta per entry' USING ERRCODE = '22023';
                END IF;
                SELECT quote_literal(coalesce(k, 'NULL')) INTO bad FROM unnest(kinds) AS k
                    WHERE k IS NULL OR k NOT IN ({kinds}) LIMIT 1;
                IF FOUND THEN
                    RAISE EXCEPTION 'Kind % is not a kind of tape entry', bad USING ERRCODE = '22023';
                END IF;
                IF EXISTS (SELECT 1 FROM unnest(kinds, payloads, metas) AS x (k, p, m)
                        WHERE p IS NULL OR m IS NULL OR p ~ '[\\n\\r]' OR m ~ '[\\n\\r]'
                        OR jsonb_typeof(p::jsonb) <> 'object' OR jsonb_typeof(m::jsonb) <> 'object')
                THEN
                    RAISE EXCEPTION 'A payload and a meta are JSON objects, each on one line'
                        USING ERRCODE = '22023';
                END IF;
                RETURN n;
            END $$""",
        # The tape's row (made on first use, owned by whoever logged in), its row lock and n new ids.
        """CREATE FUNCTION {s}.take_ids(tape_name text, n integer, notebook text, OUT tape bigint, OUT base bigint)
            LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
            BEGIN
                INSERT INTO {s}.tapes (name, owner, notebook) VALUES (tape_name, session_user, notebook)
                    ON CONFLICT (owner, name) WHERE archived IS NULL DO NOTHING;
                UPDATE {s}.tapes t SET last_id = t.last_id + n, entries = t.entries + n, updated = now()
                    WHERE t.owner = session_user AND t.name = tape_name AND t.archived IS NULL
                    RETURNING t.key, t.last_id - n INTO tape, base;
            END $$""",
        """CREATE FUNCTION {s}.line(id bigint, kind text, payload text, meta text, date text) RETURNS text
            LANGUAGE sql IMMUTABLE SET search_path = pg_catalog AS $$
            SELECT '{{"id":' || id || ',"kind":' || to_json(kind)::text || ',"payload":' || payload
                || ',"meta":' || meta || ',"date":' || to_json(date)::text || '}}'
        $$""",
        *writing_functions("{s}.channel(session_user, tape_name)"),
        f"REVOKE INSERT, UPDATE, DELETE ON {{s}}.tapes FROM {group}",
        f"REVOKE INSERT ON {{s}}.entries FROM {group}",
        "REVOKE ALL ON FUNCTION {s}.take_ids(text, integer, text) FROM PUBLIC",
        "REVOKE ALL ON FUNCTION {s}.append_entries(text, text[], text[], text[], text) FROM PUBLIC",
        f"REVOKE ALL ON FUNCTION {{s}}.import_entries({_IMPORT_ARGUMENTS}) FROM PUBLIC",
        "REVOKE ALL ON FUNCTION {s}.archive_tape(text) FROM PUBLIC",
        f"GRANT EXECUTE ON FUNCTION {{s}}.append_entries(text, text[], text[], text[], text) TO {group}",
        f"GRANT EXECUTE ON FUNCTION {{s}}.import_entries({_IMPORT_ARGUMENTS}) TO {group}",
        f"GRANT EXECUTE ON FUNCTION {{s}}.archive_tape(text) TO {group}",
    ]


def writing_functions(channel: str, *, private: bool = False) -> list[str]:
    """``append_entries``, ``import_entries`` and ``archive_tape``, each notifying ``channel`` (an
    SQL expression of ``session_user`` and ``tape_name``) when it writes: with the tape's new last id (version 3),
    or, ``private``, with nothing and replacing the functions of version 3 (version 6, ``private_channels``)."""
    iso = _literal(_ISO_DATE).replace("{", "{{").replace("}", "}}")
    create = "CREATE OR REPLACE FUNCTION" if private else "CREATE FUNCTION"
    count, reset = ("''", "''") if private else ("(b + n)::text", "'reset'")
    return [
        f"""{create} {{s}}.append_entries(tape_name text, kinds text[], payloads text[], metas text[],
                notebook text DEFAULT NULL) RETURNS TABLE (first_id bigint, stamped text)
            LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
            DECLARE n integer; k bigint; b bigint; stamp text;
            BEGIN
                n := {{s}}.check_entries(tape_name, kinds, payloads, metas);
                SELECT t.tape, t.base INTO k, b FROM {{s}}.take_ids(tape_name, n, notebook) AS t;
                stamp := to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"+00:00"');
                INSERT INTO {{s}}.entries (tape, id, kind, payload, meta, date, line)
                    SELECT k, b + x.o, x.kind, x.p::jsonb, x.m::jsonb, stamp,
                           {{s}}.line(b + x.o, x.kind, x.p, x.m, stamp)
                    FROM unnest(kinds, payloads, metas) WITH ORDINALITY AS x (kind, p, m, o);
                PERFORM pg_notify({channel}, {count});
                RETURN QUERY SELECT b + 1, stamp;
            END $$""",
        # A tape moving in from files keeps its ids and dates; the ids must continue the tape, the dates
        # must be dates and not in the future, and the entries are marked as pushed.
        f"""{create} {{s}}.import_entries(tape_name text, start_id bigint, kinds text[], payloads text[],
                metas text[], dates text[], notebook text DEFAULT NULL) RETURNS bigint
            LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
            DECLARE n integer; k bigint; b bigint;
            BEGIN
                n := {{s}}.check_entries(tape_name, kinds, payloads, metas);
                IF cardinality(dates) IS DISTINCT FROM n OR EXISTS (SELECT 1 FROM unnest(dates) AS d
                        WHERE d IS NULL OR d !~ {iso} OR d::timestamptz > now() + interval '1 day') THEN
                    RAISE EXCEPTION 'A pushed entry needs an ISO date that is not in the future'
                        USING ERRCODE = '22023';
                END IF;
                SELECT t.tape, t.base INTO k, b FROM {{s}}.take_ids(tape_name, n, notebook) AS t;
                IF b <> start_id - 1 THEN
                    RAISE EXCEPTION 'Tape % continues at entry %, not %', quote_literal(tape_name), b + 1, start_id
                        USING ERRCODE = '22023';
                END IF;
                INSERT INTO {{s}}.entries (tape, id, kind, payload, meta, date, line, pushed)
                    SELECT k, b + x.o, x.kind, x.p::jsonb, x.m::jsonb, x.d,
                           {{s}}.line(b + x.o, x.kind, x.p, x.m, x.d), true
                    FROM unnest(kinds, payloads, metas, dates) WITH ORDINALITY AS x (kind, p, m, d, o);
                PERFORM pg_notify({channel}, {count});
                RETURN b + n;
            END $$""",
        # Starting over keeps the old tape, archived, where the class's teachers still read it.
        f"""{create} {{s}}.archive_tape(tape_name text) RETURNS timestamptz
            LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
            DECLARE stamp timestamptz;
            BEGIN
                UPDATE {{s}}.tapes SET archived = clock_timestamp()
                    WHERE owner = session_user AND name = tape_name AND archived IS NULL RETURNING archived INTO stamp;
                IF stamp IS NOT NULL THEN
                    PERFORM pg_notify({channel}, {reset});
                END IF;
                RETURN stamp;
            END $$""",
    ]
