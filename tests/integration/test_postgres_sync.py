"""Moving tapes between a Bub home and a database: same frames both ways, only what is new, files Bub reads."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from harness.tapes import bub_read, postgres_server, postgres_store

from bub_nb.cli import main
from bub_nb.tape import TapeEntry, open_tape, read_tapes
from bub_nb.tape.stores.postgres.sync import pull, push

EXAMPLE_HOME = Path(__file__).resolve().parents[2] / "examples" / "data" / "bub-home"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    copy = tmp_path / "home"
    shutil.copytree(EXAMPLE_HOME, copy)
    return copy


def test_a_pushed_home_reads_back_with_the_same_frame_and_pulls_back_to_files_bub_reads(
    home: Path, tmp_path: Path, capsys: Any
) -> None:
    server = postgres_server()
    dsn = server.create_database("pushed")
    assert main(["db", "init", dsn]) == 0
    assert main(["tapes", "push", str(home), dsn]) == 0
    said = capsys.readouterr().out
    assert "Pushed" in said and "[redacted]" in said and "bub-nb-admin-secret" not in said

    from_files = read_tapes(home)
    from_database = read_tapes(store=dsn)
    assert list(from_database.columns[:2]) == ["tape_name", "owner"]
    assert list(from_database.columns[-2:]) == ["notebook", "agent"]
    assert set(from_database["owner"]) == {"postgres"}
    pd.testing.assert_frame_equal(from_database.drop(columns=["owner"]), from_files)

    elsewhere = tmp_path / "elsewhere"
    assert main(["tapes", "pull", dsn, str(elsewhere)]) == 0
    for original in sorted((home / "tapes").glob("*.jsonl")):
        pulled = elsewhere / "tapes" / original.name
        assert [(r["id"], r["kind"], r["payload"]) for r in bub_read(pulled)] == [
            (r["id"], r["kind"], r["payload"]) for r in bub_read(original)
        ]
    pd.testing.assert_frame_equal(read_tapes(elsewhere), from_files)


def test_push_and_pull_again_copy_only_what_is_new(tmp_path: Path) -> None:
    store = postgres_store()
    local = open_tape("lesson", home=tmp_path / "a")
    local.ensure_bootstrap_anchor()
    local.append_message({"role": "user", "content": "one"})
    assert push(tmp_path / "a", store).entries == {"lesson": 3}
    assert push(tmp_path / "a", store).total == 0
    local.handoff("phase/two", {"summary": "on"})
    assert push(tmp_path / "a", store).entries == {"lesson": 2}
    assert [e.id for e in store.read("lesson")] == [1, 2, 3, 4, 5]
    assert [a.name for a in store.anchors("lesson")] == ["session/start", "phase/two"]

    assert pull(store, tmp_path / "b").entries == {"lesson": 5}
    open_tape("lesson", store=store).append_message({"role": "user", "content": "written in the database"})
    assert pull(store, tmp_path / "b").entries == {"lesson": 1}
    assert pull(store, tmp_path / "b").total == 0
    pulled = open_tape("lesson", home=tmp_path / "b")
    assert [e.id for e in pulled.read()] == list(range(1, 7)) and pulled.read()[-1].payload["content"].startswith("wr")


def test_fork_lineage_moves_both_ways(tmp_path: Path) -> None:
    store = postgres_store()
    parent = open_tape("parent", home=tmp_path / "a")
    parent.ensure_bootstrap_anchor()
    parent.fork_session("child", intention="try another way")
    copied = push(tmp_path / "a", store)
    assert copied.lineage == 1 and push(tmp_path / "a", store).lineage == 0
    assert [(r["parent"], r["child"]) for r in open_tape("child", store=store).lineage()] == [("parent", "child")]
    assert pull(store, tmp_path / "b").lineage == 1 and pull(store, tmp_path / "b").lineage == 0
    assert [r["child"] for r in open_tape("parent", home=tmp_path / "b").lineage()] == ["child"]


def test_copies_that_disagree_are_left_alone_and_everything_else_is_copied(tmp_path: Path, capsys: Any) -> None:
    store = postgres_store()
    store.append("lesson", [TapeEntry.message({"role": "user", "content": "database"})])
    open_tape("lesson", home=tmp_path / "a").append_message({"role": "user", "content": "files"})
    later = open_tape("zebra", home=tmp_path / "a")  # sorts after the conflict
    later.ensure_bootstrap_anchor()
    later.fork_session("zebra-fork")
    copied = push(tmp_path / "a", store)
    assert copied.left_alone == {"lesson": "differs between the two copies at entry 1"}
    assert copied.entries == {"zebra": 2, "zebra-fork": 2} and copied.lineage == 1
    said = copied.describe("Pushed", "to the class")
    assert said == (
        "Pushed 4 new entries in 2 of 2 tapes to the class, and 1 fork records. "
        "Not copied: 'lesson' differs between the two copies at entry 1"
    )
    assert main(["tapes", "pull", store.dsn, str(tmp_path / "a"), "--schema", store.schema]) == 1
    assert "Not copied: 'lesson' differs" in capsys.readouterr().out
    assert len(store.read("lesson")) == 1 and len(open_tape("lesson", home=tmp_path / "a").read()) == 1


def test_a_copy_that_is_behind_is_brought_up_to_date_in_either_direction(tmp_path: Path) -> None:
    store = postgres_store()
    local = open_tape("lesson", home=tmp_path / "a")
    local.ensure_bootstrap_anchor()
    assert push(tmp_path / "a", store).entries == {"lesson": 2}
    for number in range(11):  # the database goes on without the files
        open_tape("lesson", store=store).append_message({"role": "user", "content": f"in class {number}"})
    assert push(tmp_path / "a", store).left_alone == {}  # the files are behind: nothing to push, no conflict
    copied = pull(store, tmp_path / "a")
    assert copied.entries == {"lesson": 11} and copied.left_alone == {}
    local.append_message({"role": "user", "content": "at home"})
    assert push(tmp_path / "a", store).entries == {"lesson": 1}
    assert [e.id for e in store.read("lesson")] == list(range(1, 15))
    assert store.read("lesson") == local.read()


def test_a_replay_fork_keeps_its_model_on_a_round_trip(tmp_path: Path) -> None:
    from bub_nb.tape.stores.lineage import record_lineage

    record = {"parent": "lesson", "child": "lesson__replay__offline", "from_anchor": None, "from_id": 1}
    record_lineage(tmp_path / "a" / "tapes", {**record, "replay": "offline"})
    store = postgres_store()
    assert push(tmp_path / "a", store).lineage == 1
    assert [r.get("replay") for r in store.lineage()] == ["offline"]
    assert pull(store, tmp_path / "b").lineage == 1
    (pulled,) = open_tape("lesson", home=tmp_path / "b").lineage()
    assert pulled["replay"] == "offline" and pulled["child"] == record["child"]


def test_the_cli_without_the_postgres_extra_says_so_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    import sys

    for name in list(sys.modules):
        if name.startswith(("psycopg", "bub_nb.tape.stores.postgres")):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as if the extra were not installed
    dsn = "postgresql://ann:secret-pw@127.0.0.1:1/class"
    for argv in (["tapes", "push", str(tmp_path), dsn], ["tapes", "pull", dsn], ["db", "init", dsn]):
        assert main(argv) == 2
        said = capsys.readouterr()
        assert (
            said.err == "bub-nb: A postgresql:// store needs the postgres extra: "
            "pip install -e '.[postgres]' in the bub_nb checkout\n"
        )
        assert said.out == ""


def test_after_a_push_the_class_overview_names_the_notebook_bub_nb_tapes_lists(tmp_path: Path, capsys: Any) -> None:
    from bub_nb import class_overview
    from bub_nb.tape.events import NOTEBOOK

    home = tmp_path / "home"
    tape = open_tape("lesson", home=home)
    tape.ensure_bootstrap_anchor()
    tape.append_event(NOTEBOOK, {"path": "/class/ann/lesson.ipynb"}, source="notebook")
    tape.append_message({"role": "user", "content": "hello"})
    assert main(["tapes", "list", str(home)]) == 0
    assert "notebook: /class/ann/lesson.ipynb" in capsys.readouterr().out
    dsn = postgres_server().create_database("notebooks")
    assert main(["db", "init", dsn]) == 0
    assert main(["tapes", "push", str(home), dsn]) == 0
    overview = class_overview(dsn).set_index("tape_name")
    assert overview.loc["lesson", "notebook"] == "/class/ann/lesson.ipynb"
