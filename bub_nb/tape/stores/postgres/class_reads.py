"""What a teacher reads of a class: each tape's owner and notebook, its summary counted by the database, and forks.

The summary is one ``SECURITY DEFINER`` function (schema version 3): it picks the tapes the caller may
read (``reads``) once per tape, then counts their entries without row-level security checking each
entry again, so a class of two hundred students answers in well under a second.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from psycopg import rows, sql

from bub_nb.tape.entries import MEMORY_ANCHOR_PREFIX
from bub_nb.tape.events import NOTEBOOK, RETRACT, RUN, UNRETRACT


class ClassStore(Protocol):
    """What these reads need of a database store (``ClassStore`` has it)."""

    role: str

    def connection(self, tape: str | None) -> Any: ...

    def query(self, text: str) -> sql.Composed: ...

    def display_name(self, owner: str, name: str) -> str: ...


# Doubled braces: the statement is formatted with the schema's name afterwards.
_NUMBER = (
    "CASE WHEN jsonb_typeof(e.payload #> '{{data,usage,FIELD}}') = 'number' "
    "THEN trunc((e.payload #>> '{{data,usage,FIELD}}')::numeric) ELSE 0 END"
)


def summary_statements(group: str) -> list[str]:
    """The ``class_summary()`` function and who may call it (part of schema version 3); ``group`` is quoted."""
    return summary_function(group)


def _json_text(text: str) -> str:
    """``text`` as a ``jsonb`` string literal, its braces doubled for the schema's formatting."""
    return sql.Literal(json.dumps(text)).as_string(None).replace("{", "{{").replace("}", "}}") + "::jsonb"


def summary_function(group: str, *, archived: bool = False, notebook_event: str | None = None) -> list[str]:
    """``class_summary()``: of live tapes (version 3), or also of archived ones, with an ``archived`` column, and
    the notebook the tape's newest ``notebook_event`` names before the one the database recorded (version 6).
    The turns, errors and notebook come from one pass over the entries that can hold them."""
    memory = sql.Literal(MEMORY_ANCHOR_PREFIX + "%").as_string(None)
    tokens = f"{_NUMBER.replace('FIELD', 'prompt_tokens')} + {_NUMBER.replace('FIELD', 'completion_tokens')}"
    run = f"(e.kind = 'event' AND e.payload -> 'name' = {_json_text(RUN)})"
    which = "entries > 0" if archived else "archived IS NULL AND entries > 0"
    columns, archive = (", archived timestamptz", ", t.archived") if archived else ("", "")
    said, notebook = "false", "t.notebook"
    if notebook_event is not None:
        said = (
            f"(e.kind = 'event' AND e.payload -> 'name' = {_json_text(notebook_event)}"
            " AND jsonb_typeof(e.payload #> '{{data,path}}') = 'string')"
        )
        notebook = "coalesce(r.notebook, t.notebook)"
    return [
        f"""CREATE FUNCTION {{s}}.class_summary() RETURNS TABLE (owner name, name text, notebook text,
                entries bigint, anchors text[], turns bigint, tokens numeric, errors bigint, last_date text{columns})
            LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog AS $$
            WITH t AS (SELECT key, owner, name, notebook, entries, last_id, archived FROM {{s}}.tapes
                       WHERE {which} AND {{s}}.reads(session_user, owner)),
            a AS (SELECT e.tape, array_agg(e.payload ->> 'name' ORDER BY e.id) AS names
                  FROM {{s}}.entries e JOIN t ON t.key = e.tape
                  WHERE e.kind = 'anchor' AND jsonb_typeof(e.payload -> 'name') = 'string'
                    AND e.payload ->> 'name' NOT LIKE {memory}
                  GROUP BY e.tape),
            r AS (SELECT e.tape,
                         count(*) FILTER (WHERE {run}) AS turns,
                         coalesce(sum({tokens}) FILTER (WHERE {run}), 0) AS tokens,
                         count(*) FILTER (WHERE e.kind = 'error'
                                          OR ({run} AND e.payload #> '{{{{data,status}}}}' = '"error"')) AS errors,
                         (array_agg(e.payload #>> '{{{{data,path}}}}' ORDER BY e.id DESC) FILTER (WHERE {said}))[1]
                             AS notebook
                  FROM {{s}}.entries e JOIN t ON t.key = e.tape
                  WHERE e.kind = 'error' OR {run} OR {said}
                  GROUP BY e.tape)
            SELECT t.owner, t.name, {notebook}, t.entries, a.names, coalesce(r.turns, 0),
                   coalesce(r.tokens, 0), coalesce(r.errors, 0), l.date{archive}
            FROM t LEFT JOIN a ON a.tape = t.key LEFT JOIN r ON r.tape = t.key
                   LEFT JOIN {{s}}.entries l ON l.tape = t.key AND l.id = t.last_id
        $$""",
        "REVOKE ALL ON FUNCTION {s}.class_summary() FROM PUBLIC",
        f"GRANT EXECUTE ON FUNCTION {{s}}.class_summary() TO {group}",
    ]


def tape_details(store: ClassStore) -> dict[str, dict[str, Any]]:
    """Each live tape the store's role may see, by the name it uses: owner, notebook, creation and last write."""
    with store.connection(None) as conn:
        found = conn.execute(
            store.query(
                "SELECT owner, name, notebook, created, updated, entries, last_id FROM {s}.tapes "
                "WHERE archived IS NULL AND entries > 0"
            )
        ).fetchall()
    keys = ("owner", "notebook", "created", "updated", "entries", "last_id")
    details = {store.display_name(row[0], row[1]): dict(zip(keys, (row[0], *row[2:]), strict=True)) for row in found}
    return dict(sorted(details.items()))


def overview_rows(store: ClassStore) -> list[dict[str, Any]]:
    """``class_overview``'s rows, archived tapes too (``archived`` says when), counted inside the database."""
    with store.connection(None) as conn:
        found = conn.execute(store.query("SELECT * FROM {s}.class_summary()")).fetchall()
    result = []
    for owner, name, notebook, entries, anchors, turns, tokens, errors, last_date, archived in found:
        phases = list(dict.fromkeys(anchors or []))
        result.append(
            {
                "tape_name": store.display_name(owner, name),
                "owner": owner,
                "notebook": notebook,
                "entries": int(entries),
                "anchors": phases,
                "last_anchor": anchors[-1] if anchors else None,
                "turns": int(turns),
                "tokens": int(tokens),
                "errors": int(errors),
                "last_activity": last_date,
                "archived": archived,
            }
        )
    # By name; a live tape before its archives, the newest archive first.
    return sorted(result, key=lambda row: (row["tape_name"], row["archived"] is not None, -_stamp(row["archived"])))


def _stamp(moment: datetime | None) -> float:
    return 0.0 if moment is None else moment.timestamp()


def record_lineage(store: ClassStore, record: dict[str, Any]) -> None:
    with store.connection(record.get("child")) as conn:
        conn.execute(
            store.query(
                "INSERT INTO {s}.lineage (parent, child, from_anchor, from_id, date, replay) "
                "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING"
            ),
            (
                record["parent"],
                record["child"],
                record.get("from_anchor"),
                record["from_id"],
                record["date"],
                record.get("replay"),
            ),
        )


def lineage(store: ClassStore) -> list[dict[str, Any]]:
    """Every fork this role may read; ``replay`` only where the fork replayed turns, as the lineage file has it."""
    with store.connection(None) as conn:
        cursor = conn.cursor(row_factory=rows.dict_row)
        found = cursor.execute(
            store.query(
                "SELECT parent, child, from_anchor, from_id, date, replay, owner FROM {s}.lineage ORDER BY date, child"
            )
        ).fetchall()
    records = []
    for row in found:
        record = {key: row[key] for key in ("parent", "child", "from_anchor", "from_id", "date")}
        if row["replay"] is not None:
            record["replay"] = row["replay"]
        if row["owner"] != store.role:
            record["owner"] = row["owner"]
        records.append(record)
    return records


# The lines a lean read of a class needs, picked in the database by the rule of ``stores/wanted.py``: of the kinds
# asked for and dated from ``since`` on, and always the anchors (phases), the ``notebook`` events (a tape's
# notebook) and the retractions (which rows are retracted); a date not spelled in UTC as the writers spell it is
# kept too. Only ever more than asked for: the frame filters the rows exactly. Row-level security still decides
# which tapes the role reads; it is checked once per tape, by the join with ``tapes``. Each tape's lines come
# back as one text, newline-separated (a stored line is JSON on one line, which the append path checks): a row
# per tape rather than per line spares the client a Python string, and the tape's columns, for every line.
_CLASS_LINES = """
SELECT t.owner, t.name, t.archived, t.notebook, string_agg(e.line, E'\\n' ORDER BY e.id)
FROM {s}.tapes t JOIN {s}.entries e ON e.tape = t.key
WHERE ((t.archived IS NULL AND t.entries > 0) OR (%(archives)s AND t.archived IS NOT NULL))
  AND (e.kind = 'anchor' OR (e.kind = 'event' AND e.payload ->> 'name' = ANY(%(always)s))
       OR ((cardinality(%(kinds)s::text[]) = 0 OR e.kind = ANY(%(kinds)s))
           AND (%(since)s::text IS NULL OR e.date COLLATE "C" >= %(since)s OR e.date !~ %(utc)s)))
GROUP BY t.key, t.owner, t.name, t.archived, t.notebook
ORDER BY t.owner, t.name, t.archived NULLS FIRST
"""
_UTC_DATE = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?(Z|\+00:00)?$"


def class_lines(
    store: ClassStore, kinds: Sequence[str] = (), since: datetime | None = None, *, archives: bool = False
) -> list[tuple[str, bool, str | None, list[bytes]]]:
    """Every tape this role reads, in one query: ``(name, archived, notebook, lines)`` per tape (an archived
    tape after its live one), holding the lines of ``kinds`` dated from ``since`` (UTC) on, and those every
    frame needs (see ``_CLASS_LINES``); all lines when neither is given."""
    floor = None if since is None else since.strftime("%Y-%m-%dT%H:%M:%S")  # text order is time order in UTC
    arguments = {
        "archives": archives, "always": [NOTEBOOK, RETRACT, UNRETRACT], "kinds": list(kinds), "since": floor,
        "utc": _UTC_DATE,
    }  # fmt: skip
    with store.connection(None) as conn, conn.transaction(), conn.cursor() as cursor:
        # The planner prices a class's join high enough to compile it, which costs more than the query runs.
        cursor.execute("SET LOCAL jit = off")
        # The tapes are sorted once their lines are joined, so the sort holds every line of the class: under the
        # default 4 MB it went to disk (38 MB for 200 tapes x 500 lines), a third of the query's time.
        cursor.execute("SET LOCAL work_mem = '256MB'")
        cursor.execute(store.query(_CLASS_LINES), arguments)
        found = cursor.fetchall()
    return [
        (store.display_name(owner, name), archived is not None, notebook, lines.encode().split(b"\n"))
        for owner, name, archived, notebook, lines in found
    ]
