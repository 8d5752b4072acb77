"""What only the database store has: a versioned schema, an anchor index, one-line errors and no passwords shown."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest
from harness.tapes import postgres_server, postgres_store
from psycopg.types.json import Jsonb

from bub_nb.errors import TapeError
from bub_nb.tape import TapeEntry, open_tape
from bub_nb.tape.stores.postgres import PostgresTapeStore, redact_dsn
from bub_nb.tape.stores.postgres.schema import VERSION, migrate, schema_version

pytest.importorskip("psycopg_pool")


def message(text: str) -> TapeEntry:
    return TapeEntry.message({"role": "user", "content": text})


def test_a_newer_package_upgrades_an_older_schema_and_keeps_its_tapes(postgres: Any) -> None:
    schema = "upgrade_me"
    with psycopg.connect(postgres.dsn(), autocommit=True) as conn:
        migrate(conn, schema, target=1)  # the first release's schema
        first = TapeEntry(1, "anchor", {"name": "session/start"}, {}, "2024-01-01T00:00:00+00:00")
        assert schema_version(conn, schema) == 1
        conn.execute(f"INSERT INTO {schema}.tapes (name, entries, last_id) VALUES ('old', 1, 1)")
        conn.execute(
            f"INSERT INTO {schema}.entries SELECT key, 1, 'anchor', %s, '{{}}', %s, %s FROM {schema}.tapes",
            (Jsonb(first.payload), first.date, first.to_line().decode().strip()),
        )
    store = PostgresTapeStore(postgres.dsn(), schema=schema)
    try:
        with psycopg.connect(postgres.dsn(), autocommit=True) as conn:
            assert schema_version(conn, schema) == VERSION
        assert [e.id for e in store.append("old", [message("after the upgrade")])] == [2]
        assert [a.name for a in store.anchors("old")] == ["session/start"]
        assert store.lineage() == []  # a table version 2 added
    finally:
        store.close()


def test_a_tapes_anchors_are_found_through_their_index(postgres: Any) -> None:
    store = postgres_store()
    store.append("t", [TapeEntry.anchor("a"), *[message(str(n)) for n in range(2000)], TapeEntry.anchor("b")])
    with psycopg.connect(postgres.dsn(), autocommit=True) as conn:
        conn.execute(f"ANALYZE {store.schema}.entries")
        plan = conn.execute(
            f"EXPLAIN SELECT id FROM {store.schema}.entries WHERE tape = 1 AND kind = 'anchor' AND id > 0 ORDER BY id"
        ).fetchall()
    assert "entries_anchors" in "\n".join(row[0] for row in plan)
    assert [(a.id, a.name) for a in store.anchors("t")] == [(1, "a"), (2002, "b")]


def test_an_entry_the_database_cannot_hold_is_refused_whole_with_the_tape_named() -> None:
    store = postgres_store()
    store.append("t", [message("kept")])
    with pytest.raises(TapeError, match="Tape 't'") as caught:
        store.append("t", [message("fine"), message("nul \x00 inside")])
    assert "\n" not in str(caught.value)
    assert [e.payload["content"] for e in store.read("t")] == ["kept"] and store.stats("t").last_id == 1


def test_passwords_in_dsns_are_redacted() -> None:
    assert redact_dsn("postgresql://ann:s3cret@db:5432/class") == "postgresql://ann:[redacted]@db:5432/class"
    assert "s3cret" not in redact_dsn("host=db user=ann password=s3cret dbname=class")
    assert "s3cret" not in redact_dsn("postgres://db/class?user=ann&password=s3cret")


def test_a_wrong_password_is_one_line_that_does_not_show_it(postgres: Any) -> None:
    with pytest.raises(TapeError) as caught:
        PostgresTapeStore(postgres.dsn(password="not-the-password-xyz"))
    text = str(caught.value)
    assert "not-the-password-xyz" not in text and "\n" not in text and "[redacted]" in text


def test_open_tape_takes_a_dsn_and_a_dsn_never_reaches_the_tape(postgres: Any, monkeypatch: Any) -> None:
    store = postgres_store()
    dsn = postgres.dsn()
    tape = open_tape("lesson", store=store)
    tape.append_message({"role": "user", "content": f"connect with {dsn}"})
    assert postgres.dsn().split(":")[2].split("@")[0] not in str(store.read("lesson")[0].payload)
    assert "[redacted]" in tape.read()[0].payload["content"]
    by_dsn = open_tape("lesson2", store=dsn)
    assert type(by_dsn.store).__name__ == "PostgresTapeStore" and "[redacted]" in by_dsn.location
    monkeypatch.setenv("BUB_STORE", dsn)
    assert open_tape("lesson3").store is by_dsn.store  # one pool per DSN
    assert "[redacted]" in repr(by_dsn) and "bub-nb-admin-secret" not in repr(by_dsn)


def test_a_store_that_is_not_a_dsn_is_refused(monkeypatch: Any) -> None:
    monkeypatch.setenv("BUB_STORE", "mysql://u:pw@h/db")
    with pytest.raises(TapeError, match="not a postgresql:// DSN") as caught:
        open_tape("t")
    assert "pw" not in str(caught.value).replace("postgresql", "")


def test_fork_lineage_lives_in_the_database(tmp_path: Path) -> None:
    store = postgres_store()
    parent = open_tape("parent", store=store)
    parent.ensure_bootstrap_anchor()
    parent.handoff("phase/two", {"summary": "s"})
    child = parent.fork_session("child", from_anchor="phase/two", intention="go on")
    assert child.read()[0].payload["name"] == "phase/two"
    [record] = child.lineage()
    assert (record["parent"], record["child"], record["from_anchor"], record["from_id"]) == (
        "parent", "child", "phase/two", parent.find_anchor("phase/two").id,
    )  # fmt: skip
    assert parent.lineage() == [record] and not (tmp_path / "session_graph.jsonl").exists()


def test_reset_with_archive_keeps_the_old_tape_in_the_database(postgres: Any) -> None:
    store = postgres_store()
    tape = open_tape("t", store=store)
    tape.ensure_bootstrap_anchor()
    tape.append_message({"role": "user", "content": "before"})
    before = len(tape)
    [anchor, _event] = tape.reset(archive=True)
    assert [e.payload.get("name") for e in tape.read()] == ["session/start", "handoff"]
    assert "[redacted]" in anchor.payload["state"]["archived"]
    with psycopg.connect(postgres.dsn(), autocommit=True) as conn:
        archived = conn.execute(
            f"SELECT count(*) FROM {store.schema}.entries e JOIN {store.schema}.tapes t ON t.key = e.tape "
            "WHERE t.archived IS NOT NULL"
        ).fetchone()
    assert archived == (before,)


def test_file_tapes_never_load_the_database_driver(tmp_path: Path) -> None:
    code = (
        "import sys, bub_nb; t = bub_nb.open_tape('t', home=sys.argv[1]); "
        "t.append_message({'role': 'user', 'content': 'postgresql://a:b@c/d'}); "
        "assert t.read()[0].payload['content'] == 'postgresql://a:[redacted]@c/d'; "
        "print(sorted(m for m in sys.modules if m.startswith('psycopg')))"
    )
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_notebooks_tape_records_which_notebook_wrote_it(tmp_path: Path, monkeypatch: Any) -> None:
    store = postgres_store()
    notebook = tmp_path / "lessons" / "week1.ipynb"
    monkeypatch.setenv("JPY_SESSION_NAME", str(notebook))
    tape = open_tape(store=store)  # this notebook's tape, named as Bub names sessions
    tape.ensure_bootstrap_anchor()
    open_tape("scratch", store=store).ensure_bootstrap_anchor()
    details = store.tape_details()
    assert details[tape.name]["notebook"] == str(notebook) and details["scratch"]["notebook"] is None
    assert details[tape.name]["owner"] == "postgres"


def test_bub_nb_run_reports_the_database_tape_when_bub_store_names_one(
    tmp_path: Path, monkeypatch: Any, capsys: Any
) -> None:
    import nbformat

    from bub_nb.cli import main

    dsn = postgres_server().create_database("headless")
    monkeypatch.setenv("BUB_STORE", dsn)
    monkeypatch.setenv("BUB_HOME", str(tmp_path / "home"))
    cells = [nbformat.v4.new_code_cell("%load_ext bub_nb"), nbformat.v4.new_code_cell("%%bub\nhello")]
    nbformat.write(nbformat.v4.new_notebook(cells=cells), tmp_path / "n.ipynb")
    assert main(["run", str(tmp_path / "n.ipynb"), "-o", str(tmp_path / "out.ipynb")]) == 0
    said = capsys.readouterr().out
    assert "Tape: postgresql://postgres:[redacted]@" in said and " 0 entries" not in said
    assert not (tmp_path / "home" / "tapes").exists()
