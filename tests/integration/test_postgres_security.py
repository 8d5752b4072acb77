"""Who sees what, with real database roles: students keep to their own tapes, a teacher reads the class."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from bub_nb.cli import main
from bub_nb.errors import TapeAccessError
from bub_nb.tape import TapeEntry, open_tape
from bub_nb.tape.stores.postgres import PostgresTapeStore

SCHEMA = "classroom"
PASSWORDS = {"ann": "ann-pw-1", "ben": "ben-pw-2", "tess": "tess-pw-3", "cleo": "cleo-pw-4"}


def message(text: str) -> TapeEntry:
    return TapeEntry.message({"role": "user", "content": text})


@pytest.fixture(scope="module")
def classroom() -> Iterator[dict[str, PostgresTapeStore]]:
    from harness.tapes import postgres_server

    server = postgres_server()
    admin = server.create_database("classroom")
    for role, password in PASSWORDS.items():
        server.create_role(role, password)
    assert main(["db", "init", admin, "--schema", SCHEMA]) == 0
    assert main(["db", "enroll", admin, "101", "ann", "ben", "--schema", SCHEMA]) == 0
    assert main(["db", "enroll", admin, "101", "tess", "--teacher", "--schema", SCHEMA]) == 0
    assert main(["db", "enroll", admin, "202", "cleo", "--schema", SCHEMA]) == 0
    stores = {
        role: PostgresTapeStore(server.dsn(role, password, "classroom"), schema=SCHEMA, migrate_schema=False)
        for role, password in PASSWORDS.items()
    }
    stores["ann"].append("ann-tape", [TapeEntry.anchor("session/start"), message("ann's work")])
    stores["ben"].append("ben-tape", [message("ben's work")])
    stores["cleo"].append("cleo-tape", [message("cleo's work")])
    yield stores
    for store in stores.values():
        store.close()


def test_a_student_sees_only_their_own_tapes(classroom: dict[str, PostgresTapeStore]) -> None:
    ben = classroom["ben"]
    assert ben.list_tapes() == ["ben-tape"]
    assert ben.read("ann/ann-tape") == [] and not ben.exists("ann/ann-tape")
    assert list(ben.anchors("ann/ann-tape")) == [] and ben.stats("ann/ann-tape").entries == 0


def test_a_student_cannot_append_to_another_students_tape(classroom: dict[str, PostgresTapeStore]) -> None:
    before = classroom["ann"].read("ann-tape")
    with pytest.raises(TapeAccessError, match="Tape 'ann/ann-tape'") as caught:
        classroom["ben"].append("ann/ann-tape", [message("ben was here")])
    assert "\n" not in str(caught.value) and "nothing was written" in str(caught.value)
    assert classroom["ann"].read("ann-tape") == before
    with pytest.raises(TapeAccessError, match="Tape 'ann/ann-tape'"):
        open_tape("ann/ann-tape", store=classroom["ben"]).reset(archive=True)
    assert classroom["ann"].read("ann-tape") == before


def test_raw_sql_as_a_student_finds_nothing_of_anyone_else(classroom: dict[str, PostgresTapeStore]) -> None:
    with psycopg.connect(classroom["ben"].dsn, autocommit=True) as conn:
        owners = conn.execute(f"SELECT DISTINCT owner FROM {SCHEMA}.tapes").fetchall()
        entries = conn.execute(f"SELECT count(*) FROM {SCHEMA}.entries").fetchone()
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(f"SELECT * FROM {SCHEMA}.members")
    assert owners == [("ben",)] and entries == (1,)
    with psycopg.connect(classroom["ben"].dsn, autocommit=True) as conn, pytest.raises(psycopg.Error):
        conn.execute(f"INSERT INTO {SCHEMA}.tapes (name, owner) VALUES ('forged', 'ann')")


def test_a_teacher_reads_every_tape_of_the_class_and_no_other(classroom: dict[str, PostgresTapeStore]) -> None:
    tess = classroom["tess"]
    assert tess.list_tapes() == ["ann/ann-tape", "ben/ben-tape"]
    assert [e.payload["content"] for e in tess.read("ann/ann-tape", 2)] == ["ann's work"]
    assert [a.name for a in tess.anchors("ann/ann-tape")] == ["session/start"]
    assert tess.read("cleo/cleo-tape") == []
    with pytest.raises(TapeAccessError, match="Tape 'ben/ben-tape'"):
        tess.append("ben/ben-tape", [message("a teacher reads, and does not write")])
    assert len(classroom["ben"].read("ben-tape")) == 1


def test_the_class_overview_shows_the_teacher_who_wrote_what(classroom: dict[str, PostgresTapeStore]) -> None:
    from bub_nb import class_overview

    frame = class_overview(classroom["tess"])
    assert list(frame["tape_name"]) == ["ann/ann-tape", "ben/ben-tape"] and list(frame["owner"]) == ["ann", "ben"]
    assert list(frame["entries"]) == [2, 1] and list(frame["anchors"]) == [["session/start"], []]


def test_init_again_is_a_no_op(classroom: Any) -> None:
    from harness.tapes import postgres_server

    assert main(["db", "init", postgres_server().dsn(database="classroom"), "--schema", SCHEMA]) == 0
    assert classroom["ben"].list_tapes() == ["ben-tape"]


def test_no_role_rewrites_an_entry_even_its_own(classroom: dict[str, PostgresTapeStore]) -> None:
    cleo = classroom["cleo"]
    cleo.append("cleo-scratch", [message("draft")])
    with psycopg.connect(cleo.dsn, autocommit=True) as conn:
        for statement in (f"UPDATE {SCHEMA}.entries SET kind = 'error'", f"DELETE FROM {SCHEMA}.entries"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)
    assert [e.kind for e in cleo.read("cleo-tape")] == ["message"]
    assert cleo.reset("cleo-scratch") is not None  # starting one's own tape over works, and keeps the old one
    assert cleo.list_tapes() == ["cleo-tape"] and cleo.read("cleo-scratch") == []
