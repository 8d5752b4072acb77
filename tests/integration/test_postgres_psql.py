"""A student with psql: every statement that would forge, change or hide a tape is refused, and the tapes still hold."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from harness.classroom import Classroom, classroom

from bub_nb.tape import TapeEntry
from bub_nb.tape.stores.postgres import PostgresTapeStore

S = "bub_nb"
_FUTURE = "2999-01-01T00:00:00+00:00"

#: What a student might type into psql, one statement each; ``{key}`` is their own tape's key, ``{next}``
#: the id the tape would take next, ``{other}`` another student's role.
STATEMENTS = (
    # entries written around the append path: forged ids, kinds, dates and lines
    f"INSERT INTO {S}.entries (tape, id, kind, payload, meta, date, line) "
    "VALUES ({key}, 999, 'message', '{{}}', '{{}}', '2001-01-01T00:00:00+00:00', '{{}}')",
    f"INSERT INTO {S}.entries (tape, id, kind, payload, meta, date, line) "
    "VALUES ({key}, {next}, 'bogus', '{{}}', '{{}}', '2001-01-01T00:00:00+00:00', 'not the payload')",
    f"INSERT INTO {S}.entries (tape, id, kind, payload, meta, date, line) "
    "SELECT tape, id + 1000, kind, payload, meta, date, line FROM {s}.entries".replace("{s}", S),
    f"COPY {S}.entries (tape, id, kind, payload, meta, date, line) FROM PROGRAM 'true'",
    # the tape's row and its counters
    f"INSERT INTO {S}.tapes (name) VALUES ('forged')",
    f"INSERT INTO {S}.tapes (name, owner) VALUES ('forged', '{{other}}')",
    f"UPDATE {S}.tapes SET entries = 0",
    f"UPDATE {S}.tapes SET last_id = 1",
    f"UPDATE {S}.tapes SET notebook = '/home/jovyan/not-mine.ipynb'",
    f"UPDATE {S}.tapes SET owner = '{{other}}'",
    f"UPDATE {S}.tapes SET archived = now()",
    f"UPDATE {S}.tapes SET name = 'renamed'",
    f"DELETE FROM {S}.tapes",
    f"TRUNCATE {S}.tapes CASCADE",
    # the entries themselves
    f"UPDATE {S}.entries SET kind = 'error'",
    f"UPDATE {S}.entries SET line = replace(line, 'work', 'play')",
    f"UPDATE {S}.entries SET date = '2001-01-01T00:00:00+00:00'",
    f"DELETE FROM {S}.entries",
    f"TRUNCATE {S}.entries",
    # the functions, with what they must refuse
    f"SELECT {S}.take_ids('mine', 5, NULL)",
    f"SELECT * FROM {S}.append_entries('mine', ARRAY['bogus'], ARRAY['{{{{}}}}'], ARRAY['{{{{}}}}'])",
    f"SELECT * FROM {S}.append_entries('mine', ARRAY['message'], ARRAY['[1, 2]'], ARRAY['{{{{}}}}'])",
    f"SELECT * FROM {S}.append_entries('mine', ARRAY['message'], ARRAY[E'{{{{\"a\":\\n1}}}}'], ARRAY['{{{{}}}}'])",
    f"SELECT * FROM {S}.append_entries('mine', ARRAY['message', 'message'], ARRAY['{{{{}}}}'], ARRAY['{{{{}}}}'])",
    f"SELECT * FROM {S}.append_entries('../elsewhere', ARRAY['message'], ARRAY['{{{{}}}}'], ARRAY['{{{{}}}}'])",
    f"SELECT * FROM {S}.append_entries('mine', ARRAY['message'], ARRAY['not json'], ARRAY['{{{{}}}}'])",
    f"SELECT {S}.import_entries('mine', 1, ARRAY['message'], ARRAY['{{{{}}}}'], ARRAY['{{{{}}}}'], "
    "ARRAY['2020-01-01T00:00:00+00:00'])",
    f"SELECT {S}.import_entries('mine', {{next}}, ARRAY['message'], ARRAY['{{{{}}}}'], ARRAY['{{{{}}}}'], "
    f"ARRAY['{_FUTURE}'])",
    f"SELECT {S}.import_entries('mine', {{next}}, ARRAY['message'], ARRAY['{{{{}}}}'], ARRAY['{{{{}}}}'], "
    "ARRAY['now'])",
    f"SELECT * FROM {S}.class_summary() WHERE false; UPDATE {S}.schema_version SET version = 0",
    # lineage and classes that are not theirs, and the schema itself
    f"INSERT INTO {S}.lineage (parent, child, from_id, date, owner) VALUES ('a', 'b', 1, 'd', '{{other}}')",
    f"INSERT INTO {S}.members (class, role, teacher) VALUES ('physics', '{{other}}', true)",
    f"ALTER TABLE {S}.entries DISABLE ROW LEVEL SECURITY",
    f"DROP POLICY own ON {S}.tapes",
    f"CREATE FUNCTION {S}.reads(viewer name, owner name) RETURNS boolean LANGUAGE sql AS 'SELECT false'",
    f"SET ROLE {S}_users; INSERT INTO {S}.tapes (name) VALUES ('as the group')",
)


@pytest.fixture(scope="module")
def room() -> Iterator[tuple[Classroom, dict[str, PostgresTapeStore]]]:
    room = classroom(students=2)
    stores = {role: PostgresTapeStore(dsn, schema=S, migrate_schema=False) for role, dsn in room.dsn.items()}
    for student in room.students:
        stores[student].append("mine", [TapeEntry.anchor("session/start"), _message(f"{student}'s work")])
    yield room, stores
    for store in stores.values():
        store.close()


def _message(text: str) -> TapeEntry:
    return TapeEntry.message({"role": "user", "content": text})


def _holds(room: Classroom, stores: dict[str, PostgresTapeStore], before: dict[str, list[TapeEntry]]) -> None:
    """Every tape as it was: same entries, ids 1..n, counters that agree, lines that agree with the columns,
    and the teacher still sees every student's tape."""
    for student, entries in before.items():
        assert stores[student].read("mine") == entries
    (bad,) = room.sql(
        f"SELECT count(*) FROM {S}.entries e JOIN {S}.tapes t ON t.key = e.tape WHERE e.line::jsonb <> "
        "jsonb_build_object('id', e.id, 'kind', e.kind, 'payload', e.payload, 'meta', e.meta, 'date', e.date)"
    )[0]
    assert bad == 0
    counters = room.sql(
        f"SELECT t.entries, t.last_id, count(e.id), coalesce(max(e.id), 0) FROM {S}.tapes t "
        f"LEFT JOIN {S}.entries e ON e.tape = t.key GROUP BY t.key"
    )
    assert all(entries == last == count == highest for entries, last, count, highest in counters), counters
    teacher = stores[room.teacher]
    assert teacher.list_tapes() == sorted(f"{s}/mine" for s in room.students)
    assert [len(teacher.read(f"{s}/mine")) for s in room.students] == [len(before[s]) for s in room.students]


@pytest.mark.parametrize("statement", STATEMENTS)
def test_a_student_with_psql_cannot_forge_change_or_hide_a_tape(
    room: tuple[Classroom, dict[str, PostgresTapeStore]], statement: str
) -> None:
    classroom_, stores = room
    student, other = classroom_.students
    before = {s: stores[s].read("mine") for s in classroom_.students}
    (key,) = classroom_.sql(f"SELECT key FROM {S}.tapes WHERE owner = %s AND name = 'mine'", (student,))[0]
    text = statement.format(key=key, next=len(before[student]) + 1, other=other)
    with psycopg.connect(classroom_.dsn[student], autocommit=True) as conn, pytest.raises(psycopg.Error):
        conn.execute(text)
    _holds(classroom_, stores, before)


def test_what_a_student_may_do_with_psql_is_read_their_own_tapes_and_append_through_bub_nb(
    room: tuple[Classroom, dict[str, PostgresTapeStore]],
) -> None:
    classroom_, stores = room
    student, other = classroom_.students
    with psycopg.connect(classroom_.dsn[student], autocommit=True) as conn:
        owners = {row[0] for row in conn.execute(f"SELECT owner FROM {S}.tapes").fetchall()}
        first, date = conn.execute(
            f"SELECT * FROM {S}.append_entries('mine', ARRAY['message'], "
            """ARRAY['{"role":"user","content":"typed in psql"}'], ARRAY['{}'])"""
        ).fetchone()  # type: ignore[misc]
    assert owners == {student}
    written = stores[student].read("mine", first)
    assert [e.payload["content"] for e in written] == ["typed in psql"] and written[0].date == date
    assert written[0].id == first == 3  # the id the tape gave, and a date from the server's clock
    assert stores[student].append("mine", [_message("and on in the notebook")])[0].id == 4
    assert stores[classroom_.teacher].read(f"{student}/mine", 3)[0].payload["content"] == "typed in psql"
    assert stores[other].read(f"{student}/mine") == []


def test_a_reset_keeps_the_old_tape_where_the_teacher_reads_it(
    room: tuple[Classroom, dict[str, PostgresTapeStore]],
) -> None:
    classroom_, stores = room
    student = classroom_.students[0]
    stores[student].append("scratch", [_message("to be started over")])
    assert stores[student].reset("scratch", archive=False) is not None
    archived: Any = classroom_.sql(
        f"SELECT t.archived IS NOT NULL, e.payload ->> 'content' FROM {S}.tapes t JOIN {S}.entries e ON e.tape = t.key "
        "WHERE t.name = 'scratch'"
    )
    assert archived == [(True, "to be started over")]
    with psycopg.connect(classroom_.dsn[classroom_.teacher], autocommit=True) as conn:
        seen = conn.execute(f"SELECT owner FROM {S}.tapes WHERE name = 'scratch'").fetchall()
    assert seen == [(student,)]
