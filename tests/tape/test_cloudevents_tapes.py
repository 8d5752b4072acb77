"""Bub's next tape format (CloudEvents 1.0 envelopes carrying ATIF steps) opens as a tape, read-only, on the example
lines in ``tests/data/bub_cloudevents`` (Bub's own test values; its README says where each comes from)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bub_nb import read_tapes
from bub_nb.errors import TapeError
from bub_nb.tape import open_tape
from bub_nb.tape.cloudevents import bub_event_name, is_cloudevent_line, read_cloudevents

EXAMPLE = Path(__file__).parents[1] / "data" / "bub_cloudevents" / "0123456789abcdef__fedcba9876543210.jsonl"
NAME = EXAMPLE.name[: -len(".jsonl")]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    tapes = tmp_path / "home" / "tapes"
    tapes.mkdir(parents=True)
    shutil.copy(EXAMPLE, tapes / EXAMPLE.name)
    return tmp_path / "home"


def test_a_line_is_told_by_its_specversion() -> None:
    first = EXAMPLE.read_text(encoding="utf-8").splitlines()[0]
    assert is_cloudevent_line(first)
    assert not is_cloudevent_line('{"id":1,"kind":"event","payload":{},"meta":{},"date":"2026-01-01T00:00:00Z"}')
    assert bub_event_name("build.bub.context.anchor.v1") == ("context.anchor", 1)
    assert bub_event_name("com.example.order.v1") is None


def test_the_example_tape_opens_as_a_tape_with_kinds_mapped_from_the_types(home: Path) -> None:
    tape = open_tape(NAME, home=home)
    entries = tape.read()
    assert [e.id for e in entries] == list(range(1, 8))
    assert [e.kind for e in entries] == ["anchor", "message", "tool_call", "tool_result", "event", "message", "message"]
    anchor, user, call, result, diagnostic, done, image = entries
    assert anchor.payload == {"name": "phase/start", "state": {}} and anchor.date == "2026-08-29T12:00:01Z"
    assert user.payload == {"role": "user", "content": "check"} and user.meta["bub"]["bubsessionid"] == "session-1"
    assert call.payload["calls"] == [
        {"id": "call-1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": 1}'}}
    ]
    assert result.payload == {"results": ['{"answer":2}']} and result.meta["cursor"] == call.meta["cursor"] == 3
    assert diagnostic.payload == {"name": "diagnostic", "data": {"owner": "human"}}
    assert diagnostic.meta["context"] is False and diagnostic.meta["cloudevent"]["type"] == "build.bub.diagnostic.v1"
    assert done.payload == {"role": "assistant", "content": "done"}
    assert image.payload["content"][1] == {"type": "image_url", "image_url": {"url": "data:image/png;base64,aW1hZ2U="}}
    assert [a.name for a in tape.anchors()] == ["phase/start"] and tape.read_only


def test_the_view_of_a_cloudevents_tape_pairs_the_call_with_its_result_and_hides_runtime_facts(home: Path) -> None:
    messages = open_tape(NAME, home=home).view().messages
    roles = [m["role"] for m in messages]
    assert roles[-5:] == ["user", "assistant", "tool", "assistant", "user"]
    tool = next(m for m in messages if m["role"] == "tool")
    assert tool["tool_call_id"] == "call-1" and tool["content"] == '{"answer":2}'
    assert not any("owner" in str(m.get("content")) for m in messages)  # the diagnostic is context=false


def test_a_cloudevents_tape_is_never_written_and_a_stray_line_is_skipped_and_counted(home: Path) -> None:
    path = home / "tapes" / EXAMPLE.name
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({"id": 1, "kind": "event", "payload": {}, "meta": {}}) + "\n")
    before = path.read_bytes()
    tape = open_tape(path)
    with pytest.raises(TapeError, match=r"CloudEvents format and opens read-only; it cannot be appended to"):
        tape.append_message({"role": "user", "content": "hi"})
    assert path.read_bytes() == before
    assert len(tape) == 7 and tape.info().bad_lines == 1


def test_reading_the_lines_directly_keeps_the_skipped_line_numbers() -> None:
    lines = [*EXAMPLE.read_text(encoding="utf-8").splitlines(), "not json", ""]
    read = read_cloudevents(lines)
    assert len(read.entries) == 7 and read.skipped == [7]


def test_a_homes_frame_and_listing_read_a_cloudevents_tape_beside_a_current_one(home: Path) -> None:
    other = open_tape("notes", home=home)
    other.append_message({"role": "user", "content": "a line of the current format"})
    frame = read_tapes(home)
    assert frame.groupby("tape_name", observed=True).size().to_dict() == {NAME: 7, "notes": 1}
    ours = frame[frame["tape_name"] == NAME]
    assert ours["kind"].tolist()[:4] == ["anchor", "message", "tool_call", "tool_result"]
    assert ours["date"].notna().all()
    env = {**os.environ, "BUB_HOME": str(home)}
    done = subprocess.run(
        [sys.executable, "-m", "bub_nb.cli", "tapes", "list"], capture_output=True, text=True, env=env, timeout=240
    )
    assert done.returncode == 0, done.stderr
    (line,) = [line for line in done.stdout.splitlines() if line.startswith(NAME)]
    assert "7 entries" in line and "last: phase/start" in line and line.endswith("format: cloudevents")
