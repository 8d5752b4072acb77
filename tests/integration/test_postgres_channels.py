"""Who may follow a tape: its owner and the teachers of the owner's class learn its channel and are woken when it
grows; a classmate can neither ask for the channel, compute it, nor hear anything on the channel it could compute
before, from bub_nb or with psql."""

from __future__ import annotations

import hashlib
import itertools
import os
import subprocess
import threading
from collections.abc import Iterator

import psycopg
import pytest
from harness.classroom import Classroom, classroom
from harness.tapes import postgres_server

from bub_nb.errors import TapeError
from bub_nb.tape import TapeEntry
from bub_nb.tape.stores.postgres import PostgresTapeStore
from bub_nb.tape.stores.postgres.roles import init_database
from bub_nb.tape.stores.postgres.schema import VERSION, migrate, schema_version

pytestmark = pytest.mark.integration

S = "bub_nb"
SENTINEL = "sentinel_done"
_upgrades = itertools.count(1)


@pytest.fixture(scope="module")
def room() -> Iterator[tuple[Classroom, dict[str, PostgresTapeStore]]]:
    room = classroom(students=2)
    stores = {role: PostgresTapeStore(dsn, schema=S, migrate_schema=False) for role, dsn in room.dsn.items()}
    for student in room.students:
        stores[student].append("lesson", [TapeEntry.anchor("session/start")])
    yield room, stores
    for store in stores.values():
        store.close()


def _old_channel(owner: str, tape: str) -> str:
    """The name any role could compute before schema version 6."""
    return "bub_" + hashlib.md5(f"{S}.{owner}/{tape}".encode()).hexdigest()[:32]


def _psql(dsn: str, statement: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["psql", dsn, "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", statement],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_classmate_is_refused_the_channel_and_the_key_it_comes_from(
    room: tuple[Classroom, dict[str, PostgresTapeStore]],
) -> None:
    classroom_, _stores = room
    student, classmate = classroom_.students
    with psycopg.connect(classroom_.dsn[classmate], autocommit=True) as conn:
        for statement in (
            f"SELECT {S}.channel(%s, 'lesson')",
            f"SELECT {S}.channel(%s, 'not-written-yet')",
            f"SELECT {S}.tape_channel(%s, 'lesson')",
            f"SELECT secret FROM {S}.channel_keys WHERE owner = %s",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement, (student,))
        (own,) = conn.execute(f"SELECT {S}.channel(%s, 'lesson')", (classmate,)).fetchone()  # type: ignore[misc]
    assert own.startswith("bub_") and own != _old_channel(classmate, "lesson")


def test_with_psql_the_classmate_is_refused_and_the_teacher_and_owner_get_one_name(
    room: tuple[Classroom, dict[str, PostgresTapeStore]],
) -> None:
    postgres_server()
    classroom_, _stores = room
    student, classmate = classroom_.students
    statement = f"SELECT {S}.channel('{student}', 'lesson')"
    refused = _psql(classroom_.dsn[classmate], statement)
    assert refused.returncode != 0 and f"may not follow the tapes of {student}" in refused.stderr
    named = {_psql(classroom_.dsn[role], statement).stdout.strip() for role in (student, classroom_.teacher)}
    assert len(named) == 1 and next(iter(named)).startswith("bub_")


def test_a_classmate_listening_hears_nothing_while_the_teacher_and_owner_follow_live(
    room: tuple[Classroom, dict[str, PostgresTapeStore]],
) -> None:
    classroom_, stores = room
    student, classmate = classroom_.students
    with pytest.raises(TapeError, match=r"cannot be followed .* may not follow the tapes of"):
        stores[classmate].follow(f"{student}/lesson")
    start = stores[student].stats("lesson").last_id
    with (
        psycopg.connect(classroom_.dsn[classmate], autocommit=True) as spy,
        stores[classroom_.teacher].follow(f"{student}/lesson") as teacher,
        stores[student].follow("lesson") as owner,
    ):
        spy.execute(f'LISTEN "{_old_channel(student, "lesson")}"')
        spy.execute(f"LISTEN {SENTINEL}")
        writer = threading.Thread(target=stores[student].append, args=("lesson", [TapeEntry.event("tick")]))
        writer.start()
        assert [e.id for e in teacher.poll(timeout=60)] == [start + 1]
        assert [e.id for e in owner.poll(timeout=60)] == [start + 1]
        writer.join()
        classroom_.sql(f"NOTIFY {SENTINEL}")
        # One listener hears notifications in the order their transactions committed: whatever the write sent
        # to a channel the classmate listens on would arrive before the sentinel.
        heard = [note.channel for note in spy.notifies(timeout=60, stop_after=1)]
    assert heard == [SENTINEL]


def test_a_notification_carries_nothing(room: tuple[Classroom, dict[str, PostgresTapeStore]]) -> None:
    classroom_, stores = room
    student = classroom_.students[0]
    with psycopg.connect(classroom_.dsn[classroom_.teacher], autocommit=True) as conn:
        (name,) = conn.execute(f"SELECT {S}.channel(%s, 'lesson')", (student,)).fetchone()  # type: ignore[misc]
        conn.execute(f'LISTEN "{name}"')
        stores[student].append("lesson", [TapeEntry.event("tick")])
        (note,) = list(conn.notifies(timeout=60, stop_after=1))
    assert note.channel == name and note.payload == ""


def test_db_init_upgrades_a_version_5_schema_to_private_channels() -> None:
    server = postgres_server()
    schema = f"up{os.getpid()}_{next(_upgrades)}"
    with psycopg.connect(server.dsn(), autocommit=True) as conn:
        migrate(conn, schema, target=5)
        assert schema_version(conn, schema) == 5
        (old,) = conn.execute(f"SELECT {schema}.channel(current_user, 't')").fetchone()  # type: ignore[misc]
        assert old == "bub_" + hashlib.md5(f"{schema}.{conn.info.user}/t".encode()).hexdigest()[:32]
    assert init_database(server.dsn(), schema=schema) == (5, VERSION)
    store = PostgresTapeStore(server.dsn(), schema=schema, migrate_schema=False)
    try:
        store.append("t", [TapeEntry.anchor("session/start")])
        with store.follow("t") as follower:
            store.append("t", [TapeEntry.event("tick")])
            assert [e.id for e in follower.poll(timeout=60)] == [2]
        with psycopg.connect(server.dsn(), autocommit=True) as conn:
            (new,) = conn.execute(f"SELECT {schema}.channel(current_user, 't')").fetchone()  # type: ignore[misc]
        assert new != old
    finally:
        store.close()
