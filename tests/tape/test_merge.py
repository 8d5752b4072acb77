"""Two people's appends to one shared tape: ids that repeat are refused on read, and ``bub-nb tapes merge``
keeps every entry with strictly increasing ids and the other side's lineage."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from bub_nb.cli import main
from bub_nb.errors import TapeError, TapeOrderWarning
from bub_nb.tape import FileTapeStore, open_tape
from bub_nb.tape.forks.merge import MERGE


def ask(path: Path, text: str) -> None:
    open_tape(path).append_message({"role": "user", "content": text})


def contents(path: Path) -> list[str]:
    return [e.payload["content"] for e in open_tape(path).read() if e.kind == "message"]


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    path = tmp_path / "shared.jsonl"
    ask(path, "common 1")
    open_tape(path).handoff("phase/one", {"summary": "see [#1]"})
    return path


def test_repeated_ids_are_refused_on_read_naming_the_tape_and_the_ids(shared: Path, tmp_path: Path) -> None:
    theirs = tmp_path / "theirs" / "shared.jsonl"
    theirs.parent.mkdir()
    shutil.copy(shared, theirs)
    ask(shared, "ours")
    ask(theirs, "theirs")
    shared.write_bytes(shared.read_bytes() + theirs.read_bytes().splitlines(keepends=True)[-1])  # both sides kept
    with pytest.warns(TapeOrderWarning, match="bub-nb tapes merge"):  # the reader that had it open reads on
        assert [e.id for e in open_tape(shared).read()][-2:] == [4, 4]
    tape = open_tape(shared, store=FileTapeStore(shared.parent))  # a fresh open: the next kernel's
    for read in (tape.read, lambda: tape.get(4), lambda: list(tape.iter_reverse()), lambda: tape.view_of_turn(-1)):
        with pytest.raises(TapeError, match=r"'shared' has ids out of order: 4 follows 4") as refused:
            read()
        assert "\n" not in str(refused.value) and "bub-nb tapes merge" in str(refused.value)
    assert sorted(tape.to_frame()["id"])[-2:] == [4, 4]  # a frame shows every line as it is, for inspection


def test_merging_two_copies_keeps_every_entry_renumbered_after_the_first(shared: Path, tmp_path: Path) -> None:
    theirs = tmp_path / "theirs.jsonl"
    shutil.copy(shared, theirs)
    ask(shared, "ours")
    ask(theirs, "theirs 1")
    open_tape(theirs).handoff("phase/theirs", {"summary": "they asked [#4]"})
    assert main(["tapes", "merge", str(shared), str(theirs)]) == 0
    merged = open_tape(shared).read()
    ids = [entry.id for entry in merged]
    assert ids == list(range(1, len(ids) + 1))
    assert contents(shared) == ["common 1", "ours", "theirs 1"]
    event = next(entry for entry in merged if entry.name == MERGE)
    assert event.payload["data"] == {"from": "theirs.jsonl", "ids": [[4, 6]], "renumbered": event.id + 1}
    anchor = next(entry for entry in merged if entry.kind == "anchor" and entry.payload["name"] == "phase/theirs")
    asked = next(entry for entry in merged if entry.payload.get("content") == "theirs 1")
    assert anchor.payload["state"]["summary"] == f"they asked [#{asked.id}]"  # the citation follows its entry
    assert oct(shared.stat().st_mode & 0o777) == "0o600"
    assert main(["tapes", "merge", str(shared), str(theirs)]) == 0  # again: nothing left to add
    assert open_tape(shared).read() == merged


def test_two_clones_that_both_appended_merge_through_git_into_one_tape(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "a",
        "GIT_AUTHOR_EMAIL": "a@example.org",
        "GIT_COMMITTER_NAME": "a",
        "GIT_COMMITTER_EMAIL": "a@example.org",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }

    def git(folder: Path, *args: str) -> str:
        done = subprocess.run(["git", *args], cwd=folder, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout

    origin = tmp_path / "origin"
    origin.mkdir()
    git(origin, "init", "-q", "-b", "main")
    (origin / ".gitattributes").write_text("*.jsonl merge=union\n")
    ask(origin / "analysis.jsonl", "shared question")
    git(origin, "add", ".gitattributes", "analysis.jsonl")
    git(origin, "commit", "-q", "-m", "tape")
    clones = [tmp_path / "ada", tmp_path / "bo"]
    for clone in clones:
        git(tmp_path, "clone", "-q", str(origin), clone.name)
        ask(clone / "analysis.jsonl", f"{clone.name}'s question")
        open_tape(clone / "analysis.jsonl").append_event("note", {"by": clone.name})
        git(clone, "commit", "-q", "-am", f"{clone.name} asked")
    git(clones[1], "pull", "-q", "--no-rebase", str(clones[0]), "main")
    tape = clones[1] / "analysis.jsonl"
    with pytest.raises(TapeError, match="ids out of order: 2 follows 3"):
        open_tape(tape, store=FileTapeStore(tape.parent)).read()  # a fresh open: the next kernel's
    assert main(["tapes", "merge", str(tape)]) == 0
    entries = open_tape(tape).read()
    assert [entry.id for entry in entries] == list(range(1, 7))
    assert sorted(contents(tape)) == ["ada's question", "bo's question", "shared question"]
    assert sorted(e.payload["data"]["by"] for e in entries if e.name == "note") == ["ada", "bo"]
