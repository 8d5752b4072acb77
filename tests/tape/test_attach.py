"""A notebook's tape attached beside it (``NOTEBOOK.tape.jsonl``), shared through git by two clones that both
append, merged back to one tape, and taken up in a Bub home that lacks it."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from harness.shell import loaded_shell

from bub_nb.cli import main
from bub_nb.errors import TapeError
from bub_nb.tape import open_tape
from bub_nb.tape.attach import attach, attached_path, import_attached, notebook_tape_name
from bub_nb.tape.stores.file import FileTapeStore


@pytest.fixture
def user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "user"
    (home / "project").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("BUB_HOME", str(home / ".bub"))
    monkeypatch.setenv("BUB_MODEL", "offline")
    (home / "project" / "analysis.ipynb").write_text("{}")
    return home


def notebook_tape(notebook: Path, home: Path | None = None) -> object:
    return open_tape(notebook_tape_name(notebook), home=home)


def lines(path: Path) -> list[dict[str, object]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def test_attach_writes_one_private_file_beside_the_notebook_without_home_paths(user: Path) -> None:
    notebook = user / "project" / "analysis.ipynb"
    tape = open_tape(notebook_tape_name(notebook))
    tape.ensure_bootstrap_anchor()
    tape.append_message({"role": "user", "content": f"look at {user}/project/data.csv"})
    tape.handoff("phase/one", {"summary": "read [#3]", "archived": str(user / ".bub" / "tapes" / "x.bak")})
    assert main(["tapes", "attach", str(notebook)]) == 0
    path = user / "project" / "analysis.tape.jsonl"
    assert attached_path(notebook) == path
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(p.name for p in path.parent.iterdir()) == ["analysis.ipynb", "analysis.tape.jsonl"]  # no sidecars
    data = path.read_bytes()
    assert str(user).encode() not in data
    records = lines(path)
    assert [r["id"] for r in records] == [e.id for e in tape.read()]
    assert [r["payload"]["content"] for r in records if r["kind"] == "message"] == ["look at ~/project/data.csv"]
    handoff = next(r for r in records if r["kind"] == "anchor" and r["payload"]["name"] == "phase/one")
    assert handoff["payload"]["state"]["archived"] == "$BUB_HOME/tapes/x.bak"

    tape.append_message({"role": "user", "content": "more"})  # a second attach replaces the file whole
    attach(tape, notebook)
    assert len(lines(path)) == len(records) + 1
    assert sorted(p.name for p in path.parent.iterdir()) == ["analysis.ipynb", "analysis.tape.jsonl"]


def test_an_attached_file_continues_in_a_home_that_lacks_the_tape_with_ids_kept(user: Path, tmp_path: Path) -> None:
    notebook = user / "project" / "analysis.ipynb"
    tape = open_tape(notebook_tape_name(notebook))
    tape.append_message({"role": "user", "content": "first"})
    tape.handoff("phase/one", {"summary": "asked [#1]"})
    attach(tape, notebook)
    elsewhere = tmp_path / "colleague" / "project"
    shutil.copytree(user / "project", elsewhere)
    other_home = tmp_path / "colleague" / ".bub"
    moved = elsewhere / "analysis.ipynb"
    assert main(["tapes", "attach", str(moved), "--import", "--home", str(other_home)]) == 0
    taken = open_tape(notebook_tape_name(moved), home=other_home, create=False)
    assert [e.to_dict() for e in taken.read()] == [e.to_dict() for e in tape.read()]
    assert stat.S_IMODE(taken.path.stat().st_mode) == 0o600
    assert taken.append_message({"role": "user", "content": "next"}).id == tape.last_id + 1
    with pytest.raises(TapeError, match=r"already holds this notebook's tape.*bub-nb tapes merge"):
        import_attached(moved, home=other_home)  # a second import never overwrites what was continued


def test_a_notebook_attaches_and_imports_through_the_magic(
    user: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    notebook = user / "project" / "analysis.ipynb"
    monkeypatch.setenv("JPY_SESSION_NAME", str(notebook))
    monkeypatch.chdir(notebook.parent)
    with loaded_shell() as nb:
        nb.run("%%bub\nHello")
        nb.run("%tape attach")
        assert "analysis.tape.jsonl" in nb.shown()
        written = len(nb.tape)
    assert len(lines(attached_path(notebook))) == written
    attached = lines(attached_path(notebook))
    monkeypatch.setenv("BUB_HOME", str(tmp_path / "fresh-home"))
    with loaded_shell() as nb:  # the first turn takes the attached tape up, before it writes
        nb.run("%%bub\nAnd now?")
        assert "continues from" in nb.shown() and "analysis.tape.jsonl" in nb.shown()
        entries = nb.tape.read()
        assert [e.to_dict() for e in entries[: len(attached)]] == attached  # ids kept
        assert [e.id for e in entries] == list(range(1, len(entries) + 1)) and len(entries) > len(attached)
        nb.run("%tape attach --import")
        assert "is this notebook's tape already" in nb.shown()  # nothing to do twice
    monkeypatch.setenv("BUB_HOME", str(tmp_path / "other-home"))
    with loaded_shell() as nb:  # by hand as the first command: the same take-up, said once
        nb.run("%tape attach --import")
        assert "continues from" in nb.shown()
        assert [e.to_dict() for e in nb.tape.read()[: len(attached)]] == attached


def test_attach_refuses_in_one_line_where_no_notebook_is_known(user: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.chdir(user)
    with loaded_shell() as nb:
        nb.refused("%tape attach", "cannot tell it; `bub-nb tapes attach NOTEBOOK`")


# -- two clones share the attached tape through git ---------------------------------------------------------------


def git(where: Path, *args: str) -> str:
    who = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t"}
    env = {**os.environ, **who, "GIT_COMMITTER_EMAIL": "t@example.org", "GIT_CONFIG_GLOBAL": os.devnull}
    done = subprocess.run(["git", *args], cwd=where, env=env, capture_output=True, text=True, check=True)
    return done.stdout


@pytest.fixture
def origin(user: Path) -> Iterator[Path]:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = user / "project"
    notebook = repo / "analysis.ipynb"
    tape = open_tape(notebook_tape_name(notebook))
    tape.append_message({"role": "user", "content": "shared question"})
    tape.handoff("phase/shared", {"summary": "asked [#1]"})
    attach(tape, notebook)
    git(repo, "init", "-q", "-b", "main")
    (repo / ".gitattributes").write_text("*.tape.jsonl merge=union\n")  # the docs' advice: keep both sides' lines
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "notebook and its tape")
    yield repo


def test_two_clones_append_merge_by_union_and_tapes_merge_renumbers_keeping_lineage(
    origin: Path, tmp_path: Path
) -> None:
    clones = []
    for who in ("ada", "bo"):
        clone = tmp_path / who / "project"
        clone.parent.mkdir()
        git(clone.parent, "clone", "-q", str(origin), "project")
        home = tmp_path / who / ".bub"
        notebook = clone / "analysis.ipynb"
        assert main(["tapes", "attach", str(notebook), "--import", "--home", str(home)]) == 0
        tape = open_tape(notebook_tape_name(notebook), home=home, create=False)
        tape.append_message({"role": "user", "content": f"{who}'s question"})
        tape.handoff(f"phase/{who}", {"summary": f"{who} asked [#{tape.last_id}]"})
        assert main(["tapes", "attach", str(notebook), "--home", str(home)]) == 0
        git(clone, "commit", "-q", "-am", f"{who} asked")
        clones.append(clone)
    ada, bo = clones
    git(bo, "pull", "-q", "--no-rebase", str(ada), "main")  # the union merge keeps both sides' lines
    attached = bo / "analysis.tape.jsonl"
    records = lines(attached)
    ids = [r["id"] for r in records]
    assert len(records) == 9 and sorted(set(ids)) == [1, 2, 3, 4, 5, 6]  # both clones used ids 4 to 6

    fresh = open_tape(attached, store=FileTapeStore(bo))
    with pytest.raises(TapeError, match=r"ids out of order: 4 follows 6") as refused:
        fresh.read()
    assert "\n" not in str(refused.value) and "bub-nb tapes merge" in str(refused.value)

    assert main(["tapes", "merge", str(attached)]) == 0
    merged = open_tape(attached, store=FileTapeStore(bo)).read()
    merged_ids = [e.id for e in merged]
    assert merged_ids == sorted(set(merged_ids))  # strictly increasing
    kept = [e for e in merged if e.name != "merge"]
    assert len(kept) == len(records)  # every entry kept
    assert sorted(e.payload["content"] for e in kept if e.kind == "message") == [
        "ada's question", "bo's question", "shared question"]  # fmt: skip
    assert sorted(e.name for e in kept if e.kind == "anchor") == ["phase/ada", "phase/bo", "phase/shared"]
    lineage = [e for e in merged if e.name == "merge"]
    assert lineage, "the merge records where the other side's entries came from"
