"""Schema version 4: redaction, the one rewrite, through a function that alone may change a stored entry.

``redact_entries`` runs as the schema's owner for the role that logged in: it changes only that role's own
tapes (live or archived), only the ``payload`` and ``meta`` of entries that exist, and builds the stored line
again with ``line()``, so the ``jsonb`` columns and the Bub line always say the same. Ids, kinds and dates
stay as they were, and the new payload and meta must be the old ones with some texts replaced by their
``[redacted sha256:…]`` markers (``redacts``): a role can hide what its entries said, never make them say something
else. Roles still have no ``UPDATE`` on the entries.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

from psycopg import sql

from bub_nb.tape._lines import Record, decode_records, dumps

_ARGUMENTS = "bigint, bigint[], text[], text[]"

#: The end of both redaction functions, once the new payloads and metas passed their checks: the rows rewritten
#: (their lines with them), and how many.
_REWRITE = """UPDATE {s}.entries e SET payload = x.p::jsonb, meta = x.m::jsonb,
                        line = {s}.line(e.id, e.kind, x.p, x.m, e.date)
                    FROM unnest(ids, payloads, metas) AS x (i, p, m)
                    WHERE e.tape = tape_key AND e.id = x.i;
                GET DIAGNOSTICS n = ROW_COUNT;
                RETURN n;
            END $$"""


def _granted(function: str, arguments: str, group: str) -> list[str]:
    """``function`` callable by the (quoted) ``group`` role only."""
    return [
        f"REVOKE ALL ON FUNCTION {{s}}.{function}({arguments}) FROM PUBLIC",
        f"GRANT EXECUTE ON FUNCTION {{s}}.{function}({arguments}) TO {group}",
    ]


def redaction_statements(schema: str, group: str) -> list[str]:
    """The statements of this step for ``schema``, granting to the (quoted) ``group`` role."""
    # Literal braces are doubled: each statement is formatted with the schema's name.
    return [
        # Whether ``new`` is ``old`` with some of its strings replaced by their markers, and nothing else changed.
        """CREATE FUNCTION {s}.redacts(old jsonb, new jsonb) RETURNS boolean
            LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog AS $$
            DECLARE k text; i integer;
            BEGIN
                IF jsonb_typeof(old) = 'string' AND jsonb_typeof(new) = 'string' THEN
                    RETURN new = old OR new #>> '{{}}' = '[redacted sha256:'
                        || encode(sha256(convert_to(old #>> '{{}}', 'UTF8')), 'hex') || ']';
                END IF;
                IF jsonb_typeof(old) IS DISTINCT FROM jsonb_typeof(new) THEN
                    RETURN false;
                END IF;
                IF jsonb_typeof(old) = 'object' THEN
                    IF (SELECT array_agg(x ORDER BY x) FROM jsonb_object_keys(old) AS x)
                            IS DISTINCT FROM (SELECT array_agg(x ORDER BY x) FROM jsonb_object_keys(new) AS x) THEN
                        RETURN false;
                    END IF;
                    FOR k IN SELECT jsonb_object_keys(old) LOOP
                        IF NOT {s}.redacts(old -> k, new -> k) THEN
                            RETURN false;
                        END IF;
                    END LOOP;
                    RETURN true;
                END IF;
                IF jsonb_typeof(old) = 'array' THEN
                    IF jsonb_array_length(old) <> jsonb_array_length(new) THEN
                        RETURN false;
                    END IF;
                    FOR i IN 0 .. jsonb_array_length(old) - 1 LOOP
                        IF NOT {s}.redacts(old -> i, new -> i) THEN
                            RETURN false;
                        END IF;
                    END LOOP;
                    RETURN true;
                END IF;
                RETURN old = new;
            END $$""",
        """CREATE FUNCTION {s}.redact_entries(tape_key bigint, ids bigint[], payloads text[], metas text[])
            RETURNS integer LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
            DECLARE n integer;
            BEGIN
                IF NOT EXISTS (SELECT 1 FROM {s}.tapes t WHERE t.key = tape_key AND t.owner = session_user) THEN
                    RAISE EXCEPTION 'Tape % is not one of your tapes', tape_key USING ERRCODE = '42501';
                END IF;
                IF cardinality(ids) IS DISTINCT FROM cardinality(payloads)
                        OR cardinality(ids) IS DISTINCT FROM cardinality(metas)
                        OR EXISTS (SELECT 1 FROM unnest(payloads, metas) AS x (p, m)
                            WHERE p IS NULL OR m IS NULL OR p ~ '[\\n\\r]' OR m ~ '[\\n\\r]'
                            OR jsonb_typeof(p::jsonb) <> 'object' OR jsonb_typeof(m::jsonb) <> 'object') THEN
                    RAISE EXCEPTION 'A redaction needs one payload and meta per id, JSON objects on one line'
                        USING ERRCODE = '22023';
                END IF;
                -- Only texts replaced by their markers: a redaction can hide what an entry said, never change it.
                IF EXISTS (SELECT 1 FROM unnest(ids, payloads, metas) AS x (i, p, m)
                        JOIN {s}.entries e ON e.tape = tape_key AND e.id = x.i
                        WHERE NOT ({s}.redacts(e.payload, x.p::jsonb) AND {s}.redacts(e.meta, x.m::jsonb))) THEN
                    RAISE EXCEPTION 'A redaction only replaces texts by their [redacted sha256:...] markers'
                        USING ERRCODE = '22023';
                END IF;
                """
        + _REWRITE,
        *_granted("redact_entries", _ARGUMENTS, group),
    ]


_TEXT_ARGUMENTS = "bigint, text, bigint[], text[], text[]"


def text_redaction_statements(schema: str, group: str) -> list[str]:
    """Schema version 5: redaction by value, where only the occurrences of one text become its marker."""
    return [
        # ``v`` with every occurrence of ``secret`` in its strings and keys replaced by ``mark``.
        """CREATE FUNCTION {s}.without_text(v jsonb, secret text, mark text) RETURNS jsonb
            LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog AS $$
            BEGIN
                CASE jsonb_typeof(v)
                    WHEN 'string' THEN RETURN to_jsonb(replace(v #>> '{{}}', secret, mark));
                    WHEN 'object' THEN
                        RETURN coalesce((SELECT jsonb_object_agg(replace(x.key, secret, mark),
                            {s}.without_text(x.value, secret, mark)) FROM jsonb_each(v) AS x), '{{}}'::jsonb);
                    WHEN 'array' THEN
                        RETURN coalesce((SELECT jsonb_agg({s}.without_text(x.value, secret, mark) ORDER BY x.o)
                            FROM jsonb_array_elements(v) WITH ORDINALITY AS x (value, o)), '[]'::jsonb);
                    ELSE RETURN v;
                END CASE;
            END $$""",
        # The new payload and meta must be exactly the old ones with the text replaced by its marker,
        # worked out here: a role can hide a text its entries hold, never make them say something else.
        """CREATE FUNCTION {s}.redact_text_entries(tape_key bigint, secret text, ids bigint[], payloads text[],
                metas text[]) RETURNS integer LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
            DECLARE n integer; mark text;
            BEGIN
                IF NOT EXISTS (SELECT 1 FROM {s}.tapes t WHERE t.key = tape_key AND t.owner = session_user) THEN
                    RAISE EXCEPTION 'Tape % is not one of your tapes', tape_key USING ERRCODE = '42501';
                END IF;
                IF secret IS NULL OR secret = '' OR cardinality(ids) IS DISTINCT FROM cardinality(payloads)
                        OR cardinality(ids) IS DISTINCT FROM cardinality(metas)
                        OR EXISTS (SELECT 1 FROM unnest(payloads, metas) AS x (p, m)
                            WHERE p IS NULL OR m IS NULL OR p ~ '[\\n\\r]' OR m ~ '[\\n\\r]') THEN
                    RAISE EXCEPTION 'A redaction needs a text and one payload and meta per id, each on one line'
                        USING ERRCODE = '22023';
                END IF;
                mark := '[redacted sha256:' || encode(sha256(convert_to(secret, 'UTF8')), 'hex') || ']';
                IF EXISTS (SELECT 1 FROM unnest(ids, payloads, metas) AS x (i, p, m)
                        LEFT JOIN {s}.entries e ON e.tape = tape_key AND e.id = x.i
                        WHERE e.id IS NULL OR x.p::jsonb <> {s}.without_text(e.payload, secret, mark)
                            OR x.m::jsonb <> {s}.without_text(e.meta, secret, mark)) THEN
                    RAISE EXCEPTION 'A redaction by value only replaces the text by its marker'
                        USING ERRCODE = '22023';
                END IF;
                """
        + _REWRITE,
        *_granted("redact_text_entries", _TEXT_ARGUMENTS, group),
    ]


class _Database(Protocol):
    """The store's connections and queries (a ``PostgresTapeStore``)."""

    def connection(self, tape: str | None) -> Any: ...

    def query(self, text: str) -> sql.Composed: ...


def redact_rows(store: _Database, names: Iterable[str], change: Callable[[Record], Record | None]) -> int:
    """Apply ``change`` to every entry of this role's tapes called one of ``names``, live and archived.

    Returns how many entries were rewritten; all of them in one transaction, or none.
    """
    wanted = sorted(set(names))
    if not wanted:
        return 0
    changed = 0
    with store.connection(None) as conn, conn.transaction():
        keys = conn.execute(
            store.query("SELECT key FROM {s}.tapes WHERE owner = session_user AND name = ANY(%s) ORDER BY key"),
            (wanted,),
        ).fetchall()
        for (key,) in keys:
            rows = conn.execute(store.query("SELECT line FROM {s}.entries WHERE tape = %s ORDER BY id"), (key,))
            records = decode_records([row[0].encode() for row in rows.fetchall()])
            updates = [(r["id"], new) for r in records if r is not None and (new := change(r)) is not None]
            if not updates:
                continue
            conn.execute(
                store.query("SELECT {s}.redact_entries(%s, %s, %s, %s)"),
                (key, [i for i, _ in updates], *_texts([new for _, new in updates])),
            )
            changed += len(updates)
    return changed


def _texts(records: list[Any]) -> tuple[list[str], list[str]]:
    return (
        [dumps(r["payload"]).decode("utf-8", "surrogatepass") for r in records],
        [dumps(r["meta"]).decode("utf-8", "surrogatepass") for r in records],
    )


def redact_text_rows(
    store: _Database, text: str, forms: list[str], change: Callable[[bytes], tuple[Any, Any] | None]
) -> dict[tuple[str, bool], list[int]]:
    """Apply ``change`` (a stored line to its new payload and meta, or ``None``) to every entry of this role's
    tapes, live and archived, whose line holds one of ``forms`` (the text as stored lines may spell it), through
    ``redact_text_entries``; all in one transaction, or none.

    Returns the ids rewritten by ``(tape name, archived)``.
    """
    touched: dict[tuple[str, bool], list[int]] = {}
    with store.connection(None) as conn, conn.transaction():
        tapes = conn.execute(
            store.query("SELECT key, name, archived IS NOT NULL FROM {s}.tapes WHERE owner = session_user ORDER BY key")
        ).fetchall()
        for key, name, archived in tapes:
            rows = conn.execute(  # only the lines holding the text in one of its forms leave the database
                store.query(
                    "SELECT id, line FROM {s}.entries e WHERE tape = %s "
                    "AND EXISTS (SELECT 1 FROM unnest(%s::text[]) AS f (form) WHERE strpos(e.line, f.form) > 0) "
                    "ORDER BY id"
                ),
                (key, forms),
            )
            updates = [(i, new) for i, line in rows.fetchall() if (new := change(line.encode())) is not None]
            if not updates:
                continue
            conn.execute(
                store.query("SELECT {s}.redact_text_entries(%s, %s, %s, %s, %s)"),
                (key, text, [i for i, _ in updates], *_texts([{"payload": p, "meta": m} for _, (p, m) in updates])),
            )
            touched.setdefault((name, bool(archived)), []).extend(i for i, _ in updates)
    return touched
