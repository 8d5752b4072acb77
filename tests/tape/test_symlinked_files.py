"""A link planted in a tapes folder is never followed: a symlinked tape, index or lineage file is refused in one
line, and the file it points at is neither read nor changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from bub_nb.errors import TapeError
from bub_nb.tape import FileTapeStore, Tape, open_tape
from bub_nb.tape.stores.lineage import read_lineage, record_lineage
from bub_nb.tape.stores.rewrite import rewrite_lines

SECRET = b'{"id": 1, "kind": "message", "payload": {"role": "user", "content": "dotfile secret"}, "date": "x"}\n'


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    target = tmp_path / "elsewhere" / "bashrc"
    target.parent.mkdir()
    target.write_bytes(SECRET)
    return target


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    folder = tmp_path / "home" / "tapes"
    folder.mkdir(parents=True)
    return folder


def test_an_append_to_a_symlinked_tape_is_refused_and_its_target_unchanged(folder: Path, outside: Path) -> None:
    (folder / "notes.jsonl").symlink_to(outside)
    tape = Tape("notes", FileTapeStore(folder))
    with pytest.raises(TapeError, match="symbolic link") as refused:
        tape.append_message({"role": "user", "content": "appended"})
    assert "\n" not in str(refused.value)
    assert outside.read_bytes() == SECRET


def test_a_symlinked_tape_is_not_read(folder: Path, outside: Path) -> None:
    (folder / "notes.jsonl").symlink_to(outside)
    tape = open_tape("notes", home=folder.parent, create=False)
    with pytest.raises(TapeError, match="symbolic link"):
        tape.read()
    with pytest.raises(TapeError, match="symbolic link"):
        tape.to_frame()


def test_a_dangling_link_is_not_created_through(folder: Path, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere-new"
    (folder / "notes.jsonl").symlink_to(target)
    with pytest.raises(TapeError, match="symbolic link"):
        Tape("notes", FileTapeStore(folder)).append_message({"role": "user", "content": "x"})
    assert not target.exists()


def test_a_symlinked_index_is_neither_read_nor_written(folder: Path, outside: Path) -> None:
    tape = Tape("notes", FileTapeStore(folder))
    tape.handoff("phase/one", {"summary": "s"})
    (folder / "notes.jsonl.idx").unlink(missing_ok=True)
    (folder / "notes.jsonl.idx").symlink_to(outside)
    reopened = Tape("notes", FileTapeStore(folder))
    reopened.handoff("phase/two", {"summary": "t"})  # the index is derived: it is rebuilt in memory
    assert [a.name for a in reopened.anchors()][-2:] == ["phase/one", "phase/two"]
    assert outside.read_bytes() == SECRET


def test_a_symlinked_lineage_file_is_refused(folder: Path, outside: Path) -> None:
    (folder / "session_graph.jsonl").symlink_to(outside)
    with pytest.raises(TapeError, match="symbolic link"):
        record_lineage(folder, {"parent": "a", "child": "b"})
    with pytest.raises(TapeError, match="symbolic link"):
        read_lineage(folder)
    assert outside.read_bytes() == SECRET


def test_a_rewrite_of_a_symlinked_tape_is_refused(folder: Path, outside: Path) -> None:
    (folder / "notes.jsonl").symlink_to(outside)
    with pytest.raises(TapeError, match="symbolic link"):
        rewrite_lines(folder / "notes.jsonl", lambda record: None)
    assert outside.read_bytes() == SECRET
