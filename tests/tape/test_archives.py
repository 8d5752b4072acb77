"""Archives a reset leaves open read-only, by path or by file name, and can be forked into a live tape."""

from __future__ import annotations

from pathlib import Path

import pytest

from bub_nb.errors import TapeError
from bub_nb.tape import open_tape


def test_an_archive_opens_read_only_and_stays_byte_for_byte(tmp_path: Path) -> None:
    tape = open_tape("lesson", home=tmp_path)
    tape.ensure_bootstrap_anchor()
    tape.handoff("phase/one", {"summary": "kept"})
    tape.append_message({"role": "user", "content": "in the archive"})
    old = [e.payload for e in tape.read()]
    archive = Path(tape.reset(archive=True)[0].payload["state"]["archived"])
    before = archive.read_bytes()

    for opened in (open_tape(archive), open_tape(str(archive)), open_tape(archive.name, home=tmp_path)):
        assert opened.read_only and not tape.read_only
        assert [e.payload for e in opened.read()] == old
        assert opened.find_anchor("phase/one").state == {"summary": "kept"}
        assert opened.view().messages[-1]["content"] == "in the archive"
        with pytest.raises(TapeError, match="read-only"):
            opened.append_message({"role": "user", "content": "no"})
        with pytest.raises(TapeError, match="read-only"):
            opened.handoff("phase/two")
        with pytest.raises(TapeError, match="read-only"):
            opened.reset(archive=True)
    assert archive.read_bytes() == before
    assert not list(tmp_path.glob("tapes/*.bak.idx"))  # nothing is written beside an archive either

    side = open_tape(archive).fork_session("lesson-again", from_anchor="phase/one", intention="pick up here")
    assert side.view().anchor.state == {"summary": "kept", "next_steps": "pick up here"}  # type: ignore[union-attr]
    assert open_tape("lesson-again", home=tmp_path).path == side.path and not side.read_only


def test_a_missing_archive_is_named(tmp_path: Path) -> None:
    with pytest.raises(TapeError, match=r"x\.jsonl\.20260101T000000Z\.bak"):
        open_tape(tmp_path / "x.jsonl.20260101T000000Z.bak")


def test_archives_from_resets_in_the_same_second_list_in_the_order_they_were_made(tmp_path: Path) -> None:
    from bub_nb.tape.stores.archive import archive_files

    folder = tmp_path / "tapes"
    folder.mkdir()
    names = ["t.jsonl.20260101T000000Z.bak", "t.jsonl.20260101T000000Z-1.bak", "t.jsonl.20260101T000000Z-2.bak"]
    names += ["t.jsonl.20260101T000000Z-10.bak", "t.jsonl.20260101T000001Z.bak"]
    for name in reversed(names):
        (folder / name).write_text("")
    assert [path.name for path in archive_files(folder)] == names
