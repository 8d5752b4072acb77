"""The questions a tape frame answers, asked again in DuckDB SQL over a home's raw JSON Lines.

An oracle the frame code did not write: it imports nothing from ``bub_nb``. Python only splits each file into
lines as a byte-level reader must (a last line without a line break is torn and left out) and decodes each
line as UTF-8 with U+FFFD for a bad byte; every other rule is a SQL statement below, written from the tape
format (docs/schema.md), so a bug shared with ``bub_nb/tape/frames`` would have to be written twice.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

_ARCHIVE = re.compile(r"^(?P<tape>.+)\.jsonl\.\d{8}T\d{6}Z(?:-\d+)?\.bak$")
_GRAPH = "session_graph.jsonl"

# One row per line that is an entry by Bub's test (an integer id, a text kind, an object payload).
_ENTRIES = """
CREATE TABLE entries AS
SELECT tape, archived, line, bad,
       CAST(j ->> '$.id' AS BIGINT) AS id,
       j ->> '$.kind' AS kind,
       j -> '$.payload' AS payload,
       CASE WHEN json_type(j, '$.meta') = 'OBJECT' THEN j -> '$.meta' ELSE '{}'::JSON END AS meta,
       CASE WHEN json_type(j, '$.date') = 'VARCHAR' THEN try_cast(j ->> '$.date' AS TIMESTAMPTZ)
            WHEN json_type(j, '$.timestamp') IN ('DOUBLE', 'BIGINT', 'UBIGINT')
                 THEN to_timestamp(CAST(j ->> '$.timestamp' AS DOUBLE)) END AS date
FROM (SELECT *, CAST(text AS JSON) AS j FROM lines WHERE json_valid(text))
WHERE json_type(j) = 'OBJECT'
  AND json_type(j, '$.id') IN ('BIGINT', 'UBIGINT') AND try_cast(j ->> '$.id' AS BIGINT) IS NOT NULL
  AND json_type(j, '$.kind') = 'VARCHAR'
  AND json_type(j, '$.payload') = 'OBJECT'
"""

# Each entry's phase: the last anchor at or before it in its file whose name is text, not empty and not memory/.
_PHASED = """
CREATE TABLE phased AS
WITH starts AS (
    SELECT tape, archived, line, id, payload ->> '$.name' AS name FROM entries
    WHERE kind = 'anchor' AND json_type(payload, '$.name') = 'VARCHAR'
      AND payload ->> '$.name' <> '' AND NOT starts_with(payload ->> '$.name', 'memory/')
)
SELECT e.*, s.name AS phase, s.id AS phase_id
FROM entries e ASOF LEFT JOIN starts s
  ON e.tape = s.tape AND e.archived = s.archived AND e.line >= s.line
"""

# Whether each row counts toward totals: a row a fork copied from a tape the home also holds does not.
_COUNTED = """
CREATE TABLE counted AS
SELECT p.*, meta ->> '$.forked_from' AS forked_from,
       coalesce(regexp_extract(meta ->> '$.forked_from', '^tape://([^/]+)/', 1) IN (SELECT DISTINCT tape FROM lines),
                false) AS copy
FROM phased p
"""

# Every tool call: the n-th call of a tool_call entry is answered by the n-th result of the next tool_result
# entry of its tape (before any other tool_call), or by a ``tool`` message naming its id.
_CALLS = """
CREATE TABLE calls AS
WITH asked AS (  -- a tool_call entry's calls, or an assistant message's tool_calls
    SELECT *, CASE WHEN kind = 'tool_call' THEN payload -> '$.calls' ELSE payload -> '$.tool_calls' END AS list
    FROM counted
    WHERE (kind = 'tool_call' AND json_type(payload, '$.calls') = 'ARRAY')
       OR (kind = 'message' AND json_type(payload, '$.tool_calls') = 'ARRAY')
),
made AS (
    SELECT c.tape, c.archived, c.line, c.copy, n.i AS position, c.list -> n.i AS call
    FROM asked c, LATERAL (SELECT unnest(range(CAST(json_array_length(c.list) AS BIGINT))) AS i) n
),
results AS (
    SELECT r.tape, r.archived, r.line,
           (SELECT max(t.line) FROM entries t WHERE t.tape = r.tape AND t.archived = r.archived
              AND (t.kind = 'tool_call' OR json_type(t.payload, '$.tool_calls') = 'ARRAY')
              AND t.line < r.line) AS call_line,
           r.payload -> '$.results' AS results
    FROM entries r WHERE r.kind = 'tool_result'
),
answered AS (  -- only the first result entry after a call entry answers it
    SELECT * FROM results QUALIFY row_number() OVER (PARTITION BY tape, archived, call_line ORDER BY line) = 1
),
named AS (
    SELECT tape, archived, payload ->> '$.tool_call_id' AS call_id, payload -> '$.content' AS result
    FROM entries WHERE kind = 'message' AND payload ->> '$.role' = 'tool'
),
failed AS (
    SELECT DISTINCT tape, archived, payload -> '$.details' ->> '$.call_id' AS call_id FROM entries
    WHERE kind = 'error' AND json_type(payload, '$.details.call_id') IS NOT NULL
)
SELECT m.tape, m.archived, m.copy, m.call ->> '$.id' AS call_id, m.call -> '$.function' ->> '$.name' AS tool,
       coalesce(a.results -> m.position, t.result) AS result,
       f.call_id IS NOT NULL
       OR coalesce(json_type(coalesce(a.results -> m.position, t.result)) = 'OBJECT'
                   AND (json_exists(coalesce(a.results -> m.position, t.result), '$.error')
                        OR (json_exists(coalesce(a.results -> m.position, t.result), '$.kind')
                            AND json_exists(coalesce(a.results -> m.position, t.result), '$.message'))),
                   false) AS failed
FROM made m
LEFT JOIN answered a ON a.tape = m.tape AND a.archived = m.archived AND a.call_line = m.line
LEFT JOIN named t ON t.tape = m.tape AND t.archived = m.archived AND t.call_id = m.call ->> '$.id'
LEFT JOIN failed f ON f.tape = m.tape AND f.archived = m.archived AND f.call_id = m.call ->> '$.id'
"""

# Each retract and unretract event's ids, from its ranges [[first, last], ...]; the last word on an id wins.
_RETRACTED = """
CREATE TABLE retracted AS
WITH said AS (
    SELECT e.tape, e.archived, e.line, e.payload ->> '$.name' AS verb,
           CAST(r.pair ->> '$[0]' AS BIGINT) AS first, CAST(r.pair ->> '$[1]' AS BIGINT) AS last
    FROM entries e, LATERAL (SELECT unnest(CAST(e.payload -> '$.data.ids' AS JSON[])) AS pair) r
    WHERE e.kind = 'event' AND e.payload ->> '$.name' IN ('retract', 'unretract')
      AND json_type(e.payload, '$.data.ids') = 'ARRAY'
),
last_word AS (
    SELECT e.tape, e.archived, e.id, s.verb FROM entries e JOIN said s
      ON s.tape = e.tape AND s.archived = e.archived AND e.id BETWEEN s.first AND s.last
    QUALIFY row_number() OVER (PARTITION BY e.tape, e.archived, e.line ORDER BY s.line DESC) = 1
)
SELECT tape, archived, id FROM last_word WHERE verb = 'retract'
"""


def _lines(folder: Path) -> pd.DataFrame:
    """Every complete line of every tape file and archive, decoded as UTF-8 with U+FFFD for a bad byte."""
    rows: list[tuple[str, bool, int, str, bool]] = []
    for path in sorted(folder.iterdir()):
        archive = _ARCHIVE.match(path.name)
        if archive is not None:
            tape, archived = archive["tape"], True
        elif path.name.endswith(".jsonl") and path.name != _GRAPH:
            tape, archived = path.name[: -len(".jsonl")], False
        else:
            continue
        raw = path.read_bytes().split(b"\n")[:-1]  # what follows the last line break is torn
        for number, line in enumerate(raw):
            try:
                text, bad = line.decode("utf-8"), False
            except UnicodeDecodeError:
                text, bad = line.decode("utf-8", "replace"), True
            rows.append((tape, archived, number, text, bad))
    return pd.DataFrame(rows, columns=["tape", "archived", "line", "text", "bad"])


class Oracle:
    """A home's tapes in DuckDB, and the frame's questions as queries (``include_archives`` as read_tapes)."""

    def __init__(self, home: Path, *, include_archives: bool = False) -> None:
        lines = _lines(home / "tapes" if (home / "tapes").is_dir() else home)
        if not include_archives:
            lines = lines[~lines["archived"]]
        self.db = duckdb.connect()
        self.db.execute("SET TimeZone = 'UTC'")
        self.db.execute("CREATE TABLE lines (tape VARCHAR, archived BOOLEAN, line BIGINT, text VARCHAR, bad BOOLEAN)")
        if len(lines):
            self.db.register("lines_frame", lines)
            self.db.execute("INSERT INTO lines SELECT * FROM lines_frame")
        for statement in (_ENTRIES, _PHASED, _COUNTED, _CALLS, _RETRACTED):
            self.db.execute(statement)

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        return self.db.execute(sql).fetchall()

    def kinds(self) -> dict[tuple[str, bool, str], int]:
        """Entries per tape, archive or not, and kind."""
        rows = self.query("SELECT tape, archived, kind, count(*) FROM entries GROUP BY ALL")
        return {(tape, archived, kind): count for tape, archived, kind, count in rows}

    def phases(self) -> dict[tuple[str, bool, int | None], tuple[str | None, int]]:
        """Rows per phase instance (the anchor's id), with the phase's name; ``None`` before the first phase."""
        rows = self.query("SELECT tape, archived, phase_id, any_value(phase), count(*) FROM phased GROUP BY ALL")
        return {(tape, archived, at): (name, count) for tape, archived, at, name, count in rows}

    def turns(self, *, forked: bool = False) -> dict[tuple[str, bool], int]:
        """``run`` events per tape; a fork's copies of a turn count only with ``forked``."""
        rows = self.query(
            f"""SELECT tape, archived, count(*) FROM counted
                WHERE kind = 'event' AND payload ->> '$.name' = 'run' {"" if forked else "AND NOT copy"}
                GROUP BY ALL"""
        )
        return {(tape, archived): count for tape, archived, count in rows}

    def tokens_per_phase(self, *, forked: bool = False) -> dict[tuple[str, bool, int | None], tuple[int, int, int]]:
        """Turns, prompt and completion tokens per phase instance, from the ``run`` events."""
        rows = self.query(
            f"""SELECT tape, archived, phase_id, count(*),
                       sum(coalesce(try_cast(payload ->> '$.data.usage.prompt_tokens' AS BIGINT), 0)),
                       sum(coalesce(try_cast(payload ->> '$.data.usage.completion_tokens' AS BIGINT), 0))
                FROM counted WHERE kind = 'event' AND payload ->> '$.name' = 'run' {"" if forked else "AND NOT copy"}
                GROUP BY ALL"""
        )
        return {
            (tape, archived, at): (turns, tokens_in, tokens_out)
            for tape, archived, at, turns, tokens_in, tokens_out in rows
        }

    def tool_calls(self, *, forked: bool = False) -> dict[tuple[str, bool, str], tuple[int, int]]:
        """Calls and failed calls per tape and tool."""
        rows = self.query(
            f"""SELECT tape, archived, tool, count(*), count(*) FILTER (WHERE failed) FROM calls
                {"" if forked else "WHERE NOT copy"} GROUP BY ALL"""
        )
        return {(tape, archived, tool): (calls, failed) for tape, archived, tool, calls, failed in rows}

    def failure_rates(self) -> dict[str, float]:
        """The share of failed calls per tool, across the home, fork copies counted once."""
        rows = self.query("SELECT tool, avg(CAST(failed AS DOUBLE)) FROM calls WHERE NOT copy GROUP BY ALL")
        return dict(rows)

    def retracted(self) -> set[tuple[str, bool, int]]:
        """The entries retracted now, by tape and id."""
        return {tuple(row) for row in self.query("SELECT tape, archived, id FROM retracted")}  # type: ignore[misc]

    def bad_bytes(self) -> set[tuple[str, bool, int]]:
        """The entries whose line held a byte that is not UTF-8."""
        return {tuple(row) for row in self.query("SELECT tape, archived, id FROM entries WHERE bad")}  # type: ignore[misc]
