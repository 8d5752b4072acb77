"""Redaction, the one rewrite: a key pasted into a prompt, forked, archived by a reset and pushed to PostgreSQL,
then redacted with the real CLI, is found nowhere under the Bub home nor in the database, and Bub still reads
the tape."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest
from harness.shell import Notebook
from harness.tapes import bub_read, postgres_store
from psycopg import sql

from bub_nb.errors import EntryNotFoundError, RetractionError
from bub_nb.tape import Tape, open_tape
from bub_nb.tape.events import REDACT, id_ranges

#: A key the write-time filter cannot recognise (it is shaped like no known key), as a user would paste one.
KEY = "AKIAbubnb7Q2XW9-hunter2-not-a-real-key"
ROOT = Path(__file__).resolve().parents[2]


def cli(*words: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-m", "bub_nb", *words], capture_output=True, text=True, timeout=120, env=env, check=False
    )


def files_holding(home: Path, text: str) -> list[str]:
    return sorted(str(p.relative_to(home)) for p in home.rglob("*") if p.is_file() and text.encode() in p.read_bytes())


def database_rows_holding(dsn: str, text: str) -> list[str]:
    """Every text, ``jsonb`` and name column of every table in every schema but the catalog's that holds ``text``."""
    found = []
    with psycopg.connect(dsn) as conn:
        columns = conn.execute(
            "SELECT table_schema, table_name, column_name FROM information_schema.columns "
            "WHERE table_schema NOT IN ('pg_catalog', 'information_schema') "
            "AND data_type IN ('text', 'jsonb', 'json', 'character varying', 'name', 'ARRAY')"
        ).fetchall()
        assert len(columns) > 5
        for schema, table, column in columns:
            query = sql.SQL("SELECT count(*) FROM {}.{} WHERE {}::text LIKE %s").format(
                sql.Identifier(schema), sql.Identifier(table), sql.Identifier(column)
            )
            count = conn.execute(query, (f"%{text}%",)).fetchone()[0]  # type: ignore[index]
            if count:
                found.append(f"{schema}.{table}.{column}: {count}")
    return found


def test_a_pasted_key_is_redacted_from_the_tape_its_fork_its_archive_and_the_database(
    nb: Notebook, tmp_path: Path, postgres: Any
) -> None:
    home = tmp_path / "home"
    nb.run(f"%%bub\nPlease use my key {KEY} for the upload")
    main = nb.tape
    nb.run("%tape fork side-quest")
    nb.run("%%bub\nAnd on the side?")
    dsn = postgres.create_database("redaction")
    assert cli("db", "init", dsn).returncode == 0
    assert cli("tapes", "push", str(home), dsn).returncode == 0
    nb.run("%tape reset --archive")  # the fork's copy now lives in an archive
    holders = {p.split("/")[-1].split(".jsonl")[0] for p in files_holding(home, KEY)}
    assert holders == {main.name, "side-quest"} and any(".bak" in p for p in files_holding(home, KEY))
    assert database_rows_holding(dsn, KEY)

    ids = sorted(entry.id for entry in main.search(KEY, limit=None))  # the prompt, and the answer that echoed it
    before = bub_read(main.path)  # type: ignore[arg-type]
    done = cli("tapes", "redact", main.name, *(f"--entry={i}" for i in ids), "--home", str(home), "--database", dsn)
    assert done.returncode == 0, done.stderr
    assert f"Redacted {len(ids)} entries of {main.name}" in done.stdout and "recorded as entry" in done.stdout

    assert files_holding(home, KEY) == []
    assert database_rows_holding(dsn, KEY) == []
    after = bub_read(main.path)  # type: ignore[arg-type]
    assert [(e["id"], e["kind"], e["date"]) for e in after[: len(before)]] == [
        (e["id"], e["kind"], e["date"]) for e in before
    ]
    assert all("[redacted sha256:" in str(e["payload"]) for e in after if e["id"] in ids)
    event = after[-1]
    assert event["payload"]["name"] == REDACT and event["payload"]["data"]["ids"] == id_ranges(ids)
    assert event["payload"]["data"]["copies"] and event["payload"]["data"]["database"] >= len(ids)
    assert KEY not in str(main.view().messages) and len(main.view().messages) > 1
    pushed = cli("tapes", "push", str(home), dsn).stdout  # both copies were redacted alike, so pushing goes on
    assert "Pushed" in pushed and f"{main.name!r} differs" not in pushed  # (the fork was reset: it differs)


def test_a_redaction_is_refused_before_anything_is_rewritten(tape: Tape) -> None:
    tape.append_message({"role": "user", "content": "a secret"})
    before = tape.path.read_bytes()  # type: ignore[union-attr]
    with pytest.raises(EntryNotFoundError, match="Entry #9 is not on tape"):
        tape.redact([1, 9])
    assert tape.path.read_bytes() == before  # type: ignore[union-attr]
    tape.redact(1, by="teacher")
    with pytest.raises(RetractionError, match="no text to redact"):
        tape.redact(1)


def test_an_interrupted_rewrite_leaves_the_old_tape_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tape = open_tape("t", home=tmp_path)
    tape.append_message({"role": "user", "content": f"key {KEY}"})
    before = tape.path.read_bytes()  # type: ignore[union-attr]

    def crash(*args: Any) -> None:
        raise OSError("the machine went down")

    monkeypatch.setattr("bub_nb.tape.stores.rewrite.os.replace", crash)
    with pytest.raises(OSError, match="went down"):
        tape.redact(1)
    assert tape.path.read_bytes() == before  # type: ignore[union-attr]
    assert [p.name for p in tape.path.parent.iterdir() if "rewrite" in p.name] == []  # type: ignore[union-attr]


def test_on_the_database_a_redaction_can_hide_an_entry_but_never_change_what_it_said(postgres: Any) -> None:
    store = postgres_store()
    tape = open_tape("lesson", store=store)
    tape.append_message({"role": "user", "content": f"my key {KEY}"})
    tape.append_message({"role": "assistant", "content": "noted"})
    event = tape.redact(1, by="student")
    assert event.payload["data"]["database"] == 1 and KEY not in str(tape.read())
    assert tape.get(1).payload["content"].startswith("[redacted sha256:")
    with store.connection(None) as conn:
        key = conn.execute(store.query("SELECT key FROM {s}.tapes WHERE name = 'lesson'")).fetchone()[0]
        forged = '{"role":"assistant","content":"I never said noted"}'
        with pytest.raises(psycopg.Error, match="only replaces texts"):
            conn.execute(store.query("SELECT {s}.redact_entries(%s, %s, %s, %s)"), (key, [2], [forged], ["{}"]))
    assert tape.get(2).payload["content"] == "noted"


def test_on_the_database_a_text_is_redacted_by_value_everywhere_and_the_holder_stays(postgres: Any) -> None:
    from bub_nb.agent.team import Team
    from bub_nb.tape.corrections import marker
    from bub_nb.tape.corrections.by_value import redact_text

    secret = "db-secret-Qx81-only-in-this-test"
    store = postgres_store()
    tape = open_tape("lesson", store=store)
    tape.append_message({"role": "user", "content": f"connect with {secret} then"})
    tape.handoff("phase/connect", {"summary": f"The password {secret} was given [#1].", "sources": [1]})
    team = Team(tape, ["rev"])
    team.handoff("review", to="rev", reason=f"check what {secret} opens")
    side = open_tape("side", store=store)
    side.append_message({"role": "user", "content": secret})
    side.reset(archive=True)
    assert team.holder() == "rev" and database_rows_holding(postgres.dsn(), secret)

    done = redact_text(secret, store=store, by="student")

    assert database_rows_holding(postgres.dsn(), secret) == []
    assert team.holder() == "rev"  # from, to and ownership were not touched
    mark = marker(secret)
    assert tape.get(1).payload["content"] == f"connect with {mark} then"
    assert open_tape("lesson~rev", store=store).find_anchor("review").state["context_handoff"]["content"] == {
        **open_tape("lesson~rev", store=store).find_anchor("review").state["context_handoff"]["content"],
        "reason": f"check what {mark} opens",
    }
    assert set(done.events) == {"lesson", "lesson~rev", "side"} and "side (archived)" in done.files
    assert tape.read()[-1].payload["data"]["text"] == mark
    with store.connection(None) as conn:
        key = conn.execute(store.query("SELECT key FROM {s}.tapes WHERE name = 'lesson'")).fetchone()[0]
        forged = '{"role":"user","content":"I said something else"}'
        with pytest.raises(psycopg.Error, match="only replaces the text by its marker"):
            conn.execute(
                store.query("SELECT {s}.redact_text_entries(%s, %s, %s, %s, %s)"),
                (key, "then", [1], [forged], ["{}"]),
            )
    assert tape.get(1).payload["content"] == f"connect with {mark} then"


def test_a_text_redacted_in_a_home_and_its_pushed_copies_leaves_them_alike(tmp_path: Path, postgres: Any) -> None:
    from bub_nb.agent.team import Team

    home, secret = tmp_path / "home", "pushed-secret-7Hk2-in-a-handoff"
    tape = open_tape("nb", home=home)
    tape.append_message({"role": "user", "content": f"the token is {secret}"})
    Team(tape, ["rev"]).handoff("review", to="rev", reason=f"rotate {secret}")
    dsn = postgres.create_database("redaction_text")
    assert cli("db", "init", dsn).returncode == 0
    assert cli("tapes", "push", str(home), dsn).returncode == 0
    assert files_holding(home, secret) and database_rows_holding(dsn, secret)

    done = cli("tapes", "redact", "--text", secret, "--home", str(home), "--database", dsn)

    assert done.returncode == 0, done.stderr
    assert files_holding(home, secret) == [] and database_rows_holding(dsn, secret) == []
    assert "nb~rev" in done.stdout and secret not in done.stdout
    pushed = cli("tapes", "push", str(home), dsn).stdout  # the redact events go over; the copies stay alike
    assert "differs" not in pushed and "Pushed 2 new entries in 2 of 2 tapes" in pushed
