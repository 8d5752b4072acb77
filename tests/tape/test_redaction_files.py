"""Redaction on files: only the named entries change, lines other writers wrote keep their fields, Bub still reads
the tape, the index is rebuilt, and a line Bub appends during the rewrite is kept."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from harness.tapes import bub_append, bub_read

from bub_nb.errors import TapeError
from bub_nb.tape import MemoryTapeStore, TapeEntry, open_tape, read_tapes
from bub_nb.tape.corrections import marker
from bub_nb.tape.stores.rewrite import rewrite_lines

SECRET = "correct-horse-battery-staple-4711"


def test_only_the_named_entries_change_and_bub_still_reads_every_line(tmp_path: Path) -> None:
    tape = open_tape("t", home=tmp_path)
    tape.handoff("phase/one", {"summary": "start"})
    pasted = tape.append_message({"role": "user", "content": f"password {SECRET}"}, source=f"%%bub\n{SECRET}")
    bub_append(tape.path, [TapeEntry.message({"role": "assistant", "content": "ok"})])  # type: ignore[arg-type]
    old_line = {"id": 5, "kind": "message", "payload": {"role": "user", "content": SECRET}, "timestamp": 1.5}
    with tape.path.open("a") as handle:  # type: ignore[union-attr]
        handle.write(json.dumps(old_line) + "\n")  # an older line: a float timestamp, no meta
    before = bub_read(tape.path)  # type: ignore[arg-type]
    tape.anchors()  # the index sidecar is written
    event = tape.redact([pasted.id, 5], by="ada")

    after = bub_read(tape.path)  # type: ignore[arg-type]
    assert [e["id"] for e in after] == [*[e["id"] for e in before], event.id]
    unchanged = [e for e in before if e["id"] not in (pasted.id, 5)]
    assert unchanged == [e for e in after if e["id"] in {u["id"] for u in unchanged}]
    redacted = {e["id"]: e for e in after}
    assert redacted[pasted.id]["payload"] == {"role": "user", "content": marker(f"password {SECRET}")}
    assert redacted[pasted.id]["meta"] == {"source": marker(f"%%bub\n{SECRET}")}
    assert redacted[5] == {**old_line, "payload": {"role": "user", "content": marker(SECRET)}}  # timestamp kept
    assert SECRET not in tape.path.read_text()  # type: ignore[union-attr]
    assert [a.name for a in tape.anchors()] == ["phase/one"] and len(tape) == len(after)
    assert event.payload["data"] == {"ids": [[pasted.id, pasted.id], [5, 5]], "by": "ada", "copies": {}, "database": 0}


def test_a_line_bub_appends_while_the_file_is_rewritten_is_kept(tmp_path: Path) -> None:
    tape = open_tape("t", home=tmp_path)
    tape.append_message({"role": "user", "content": SECRET})
    path: Path = tape.path  # type: ignore[assignment]
    calls = []

    def change(record: dict[str, Any]) -> dict[str, Any] | None:
        if not calls:  # Bub, which takes no lock, appends just as the first pass reads the file
            bub_append(path, [TapeEntry.message({"role": "assistant", "content": "appended meanwhile"})])
        calls.append(record["id"])
        return {**record, "payload": {"role": "user", "content": "gone"}} if record["id"] == 1 else None

    assert rewrite_lines(path, change) == [1]
    assert [(e["id"], e["payload"]["content"]) for e in bub_read(path)] == [(1, "gone"), (2, "appended meanwhile")]


def test_an_entry_left_only_in_an_archive_is_redacted_there_and_the_live_tape_records_it(tmp_path: Path) -> None:
    tape = open_tape("t", home=tmp_path)
    tape.append_message({"role": "user", "content": SECRET})
    archived = tape.reset(archive=True)[0].payload["state"]["archived"]
    archive = open_tape(archived)
    assert archive.read_only
    event = archive.redact(1)
    assert SECRET not in Path(archived).read_text() and archive.get(1).payload["content"] == marker(SECRET)
    assert tape.read()[-1] == event and event.payload["data"]["ids"] == [[1, 1]]


def test_a_tape_kept_only_in_memory_cannot_be_redacted(tmp_path: Path) -> None:
    tape = open_tape("m", store=MemoryTapeStore())
    tape.append_message({"role": "user", "content": SECRET})
    with pytest.raises(TapeError, match="redaction rewrites files or a database"):
        tape.redact(1)
    assert len(tape) == 1


def test_a_lean_read_of_some_kinds_still_knows_which_rows_are_retracted(tmp_path: Path) -> None:
    tape = open_tape("t", home=tmp_path)
    kept = tape.append_message({"role": "user", "content": "kept"})
    gone = tape.append_message({"role": "user", "content": "taken back"})
    tape.retract(gone.id)
    for frame in (read_tapes(tmp_path, kinds=["message"]), read_tapes(tmp_path, kinds=["message"], as_="arrow")):
        rows = frame if isinstance(frame, pd.DataFrame) else frame.to_pandas()
        assert dict(zip(rows["id"], rows["retracted"], strict=True)) == {kept.id: False, gone.id: True}
