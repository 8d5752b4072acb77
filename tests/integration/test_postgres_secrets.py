"""No database password of any shape shows: not in an output, an error, a log line, a saved notebook or on a tape."""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

import nbformat
import pytest
from harness.classroom import Classroom, classroom
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg import sql

from bub_nb.errors import BubNbError
from bub_nb.tape import open_tape
from bub_nb.tape.stores.dsn import redact_dsn
from bub_nb.tape.stores.postgres import PostgresTapeStore

S = "bub_nb"
EXAMPLES = int(os.environ.get("BUB_SECRET_EXAMPLES", "25"))

#: Letters, the characters a DSN gives meaning to, quotes, backslashes and other scripts.
PASSWORDS = st.text(
    alphabet=st.sampled_from(list("abcXYZ019 @:/%?&#='\"\\+-_.é日ß€😀")), min_size=8, max_size=24
).filter(lambda pw: pw.strip() == pw and len(set(pw)) > 4)


def _keyword(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _forms(room: Classroom, role: str, password: str, database: str) -> dict[str, str]:
    port = room.admin.rsplit(":", 1)[1].split("/")[0]
    return {
        "url": f"postgresql://{role}:{quote(password, safe='')}@127.0.0.1:{port}/{database}",
        # hostaddr: however libpq splits what was typed, it never looks a host name up
        "url as typed": f"postgresql://{role}:{password}@127.0.0.1:{port}/{database}?hostaddr=127.0.0.1",
        "key=value": f"host=127.0.0.1 port={port} user={role} password={_keyword(password)} dbname={database}",
    }


def _shows(password: str, text: str) -> bool:
    """The password, encoded or not, or a piece of it a parser might quote back (split at '@', ':' or '/')."""
    pieces = {piece for piece in re.split(r"[@:/]", password) if len(piece.strip()) >= 6}
    return any(secret in text for secret in {password, quote(password, safe=""), *pieces})


def _set_password(room: Classroom, role: str, password: str) -> None:
    statement = sql.SQL("ALTER ROLE {} PASSWORD {}").format(sql.Identifier(role), sql.Literal(password))
    room.sql(statement.as_string(None))


def _lines(room: Classroom, role: str) -> list[tuple[Any, ...]]:
    """The stored lines of every tape ``role`` owns, read as the database's owner."""
    return room.sql(f"SELECT e.line FROM {S}.entries e JOIN {S}.tapes t ON t.key = e.tape WHERE t.owner = %s", (role,))


@pytest.fixture(scope="module")
def room() -> Classroom:
    return classroom(students=1)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(password=PASSWORDS, pasted=PASSWORDS)
def test_no_password_of_any_shape_shows_anywhere(
    room: Classroom, password: str, pasted: str, caplog: pytest.LogCaptureFixture
) -> None:
    (student,) = room.students
    database = room.admin.rsplit("/", 1)[1]
    room.sql(
        sql.SQL("ALTER ROLE {} PASSWORD {}").format(sql.Identifier(student), sql.Literal(password)).as_string(None)
    )
    caplog.set_level(logging.DEBUG)
    seen: list[str] = []
    for form, dsn in _forms(room, student, password, database).items():
        try:  # the right password; as typed in a URL, libpq may read the address differently and fail
            store = PostgresTapeStore(dsn, schema=S, migrate_schema=False, pool_size=1)
        except BubNbError as error:
            assert form == "url as typed", (form, str(error))
            seen.append(str(error))
        else:
            seen += [store.location, repr(store), store.stats("t").location]
            tape = open_tape("secrets", store=store)
            # pasted into a prompt: this DSN and one never used to connect, in every form
            for text in [dsn, *_forms(room, student, pasted, "elsewhere").values()]:
                tape.append_message({"role": "user", "content": f"My database is {text} , please check it"})
            store.close()
        for wrong in (f"{database}_missing", "x y"):
            with pytest.raises(BubNbError) as caught:
                PostgresTapeStore(_forms(room, student, password, wrong)[form], schema=S, pool_size=1)
            seen.append(str(caught.value))
    lines = room.sql(
        f"SELECT e.line FROM {S}.entries e JOIN {S}.tapes t ON t.key = e.tape WHERE t.owner = %s", (student,)
    )
    seen += [line for (line,) in lines] + [record.getMessage() for record in caplog.records]
    for text in seen:
        assert not _shows(password, text) and not _shows(pasted, text), text
    room.sql(f"DELETE FROM {S}.tapes")


def test_redaction_hides_a_password_with_a_space_or_an_unencoded_at_whole() -> None:
    for typed in (
        "postgresql://cleo:my secret@pw@db.example.edu/class",
        "postgresql://cleo:p@ss/w:rd@db.example.edu:5432/class?sslmode=require",
        "host=db user=cleo password='my secret\\'s' dbname=class",
        "postgres://db/class?user=cleo&password=my secret",
    ):
        shown = redact_dsn(f"Tape store {typed} cannot be reached")
        assert "secret" not in shown and "ss/w" not in shown and "[redacted]" in shown, shown


def test_a_notebook_with_an_awkward_password_saves_no_trace_of_it(room: Classroom, tmp_path: Path) -> None:
    """Typed as a user types it: the DSN as they have it (a space and an unencoded @), then encoded."""
    from nbclient import NotebookClient

    (student,) = room.students
    password = "my secret@pw"
    room.sql(
        sql.SQL("ALTER ROLE {} PASSWORD {}").format(sql.Identifier(student), sql.Literal(password)).as_string(None)
    )
    database = room.admin.rsplit("/", 1)[1]
    forms = _forms(room, student, password, database)
    cells = [
        "%load_ext bub_nb",
        f"%config BubMagics.store = {forms['url as typed']!r}",
        "%%bub\nhello",
        f"%config BubMagics.store = {forms['url']!r}",
        f"%%bub\nmy database is {forms['url as typed']} and also {forms['key=value']}",
        "%tape info",
        "import logging; logging.getLogger().handlers",
    ]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code) for code in cells])
    home = tmp_path / "home"
    saved = tmp_path / "class.ipynb"
    env = {"BUB_HOME": str(home), "BUB_MODEL": "offline", "JPY_SESSION_NAME": str(saved)}
    old = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    try:
        NotebookClient(
            notebook, timeout=120, allow_errors=True, resources={"metadata": {"path": str(tmp_path)}}
        ).execute()
    finally:
        for name, value in old.items():
            os.environ.pop(name, None) if value is None else os.environ.__setitem__(name, value)
    nbformat.write(notebook, saved)
    outputs: list[Any] = [output for cell in notebook.cells[1:] for output in cell.get("outputs", [])]
    assert any("[redacted]" in str(output) for output in outputs[:2]), outputs[:2]
    text = saved.read_text()
    for cell_number in (1, 3, 4):  # the source of a cell is what the user typed; its outputs are ours
        notebook.cells[cell_number].source = ""
    nbformat.write(notebook, saved)
    assert not _shows(password, saved.read_text()) and not _shows("my secret", saved.read_text())
    lines = room.sql(
        f"SELECT e.line FROM {S}.entries e JOIN {S}.tapes t ON t.key = e.tape WHERE t.owner = %s", (student,)
    )
    assert lines and not any(_shows(password, line) or "my secret" in line for (line,) in lines)
    assert "my database is" in "".join(line for (line,) in lines) and text


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pasted=PASSWORDS)
def test_a_pasted_text_of_any_shape_is_redacted_by_value_from_every_row(room: Classroom, pasted: str) -> None:
    """Quotes, backslashes, '@', other scripts and emoji: the database works the replacement out as Python does."""
    from bub_nb.tape.corrections import marker
    from bub_nb.tape.corrections.by_value import redact_text

    (student,) = room.students
    _set_password(room, student, "student-pw-fixed")
    dsn = _forms(room, student, "student-pw-fixed", room.admin.rsplit("/", 1)[1])["url"]
    store = PostgresTapeStore(dsn, schema=S, migrate_schema=False, pool_size=1)
    try:
        tape = open_tape("pasted", store=store)
        tape.append_message({"role": "user", "content": f"it is {pasted}, twice: {pasted}"}, note={pasted: pasted})
        done = redact_text(pasted, store=store)
        assert done.files == {"pasted": [1]}
        mark = marker(pasted)
        assert tape.get(1).payload["content"] == f"it is {mark}, twice: {mark}" and tape.get(1).meta["note"] == {
            mark: mark
        }
    finally:
        store.close()
    texts = [line for (line,) in _lines(room, student)] + [
        str(value) for (value,) in room.sql(f"SELECT payload::text || meta::text FROM {S}.entries")
    ]
    assert all(pasted not in text and json.dumps(pasted)[1:-1] not in text for text in texts)
    room.sql(f"DELETE FROM {S}.tapes")
