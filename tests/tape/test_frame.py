"""Tapes as DataFrames: one row per entry, the df.tape accessor, and every tape in one frame."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from harness.tapes import STORE_KINDS, bub_append, call_names, make_store
from hypothesis import example, given, settings
from hypothesis import strategies as st

from bub_nb.errors import AnchorNotFoundError
from bub_nb.tape import FileTapeStore, Tape, TapeEntry, open_tape, read_tapes
from bub_nb.tape.frames.frame import entries_to_frame
from bub_nb.tape.text import entry_role, entry_text

pytestmark = pytest.mark.usefixtures("reader")  # every test on each reader (conftest.py)

CALL = {"id": "call_1", "type": "function", "function": {"name": "fs.read", "arguments": '{"path": "a.py"}'}}


def fill(tape: Tape) -> None:
    tape.append_message({"role": "user", "content": "before any anchor"})
    tape.ensure_bootstrap_anchor()
    tape.append_system("be brief")
    tape.append_message({"role": "user", "content": "read a.py"}, run_id="r1")
    tape.append_tool_call([CALL], run_id="r1")
    tape.append_tool_result(["print('hi')"], run_id="r1")
    tape.append_message({"role": "assistant", "content": "it prints hi"}, run_id="r1")
    tape.append_event("run", {"status": "ok", "usage": {"prompt_tokens": 120, "completion_tokens": 9}}, run_id="r1")
    tape.handoff("phase/impl", {"summary": "read the file"})
    tape.append(TapeEntry.anchor("memory/open", {"version": 1}))
    tape.append_message({"role": "tool", "name": "calc", "content": "4", "tool_call_id": "c9"})
    tape.append_error("model", "timed out")
    tape.append_event("run", {"status": "error", "usage": None})


@pytest.fixture(params=STORE_KINDS)
def tape(request: pytest.FixtureRequest, tmp_path: Path) -> Tape:
    tape = open_tape("t", store=make_store(request.param, tmp_path))
    fill(tape)
    return tape


def expected_row(entry: TapeEntry, phase: str | None, phase_id: int | None = None) -> dict[str, object]:
    """What one row must say about an entry, worked out entry by entry."""
    calls = call_names(entry) if entry.kind in ("message", "tool_call") else []
    own = entry.payload.get("name") if entry.kind in ("anchor", "event", "message") else None
    own = own if isinstance(own, str) else None
    data = entry.payload.get("data")
    usage = data.get("usage") if entry.kind == "event" and own == "run" and isinstance(data, dict) else None
    usage = usage if isinstance(usage, dict) else {}

    def count(value: object) -> int | None:  # a token count, or missing when the value is not one
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        return value if type(value) is int else None

    return {
        "tape_name": "t",
        "id": entry.id,
        "kind": entry.kind,
        "role": entry_role(entry),
        "name": own if own is not None else (calls[0] if len(calls) == 1 else None),
        "content": entry_text(entry),
        "tools": calls,
        "phase": phase,
        "phase_id": phase_id,
        "run_id": entry.meta.get("run_id"),
        "forked_from": entry.meta.get("forked_from"),
        "prompt_tokens": count(usage.get("prompt_tokens")),
        "completion_tokens": count(usage.get("completion_tokens")),
        "retracted": False,  # this tape retracts nothing
        "bad_bytes": False,
        "payload": entry.payload,
        "meta": entry.meta,
    }


def test_one_row_per_entry_with_flattened_columns(tape: Tape) -> None:
    frame = tape.to_frame()
    assert list(frame.columns) == [
        "tape_name", "id", "kind", "date", "role", "name", "content", "tools", "phase", "phase_id", "run_id",
        "forked_from", "prompt_tokens", "completion_tokens", "retracted", "bad_bytes", "payload", "meta",
    ]  # fmt: skip
    entries = tape.read()
    assert len(frame) == len(entries) and frame.attrs["tape"] == "t"
    assert str(frame["date"].dtype) == "datetime64[us, UTC]"
    assert list(frame["date"]) == [pd.Timestamp(e.date) for e in entries]
    phase, phase_id = None, None
    for entry, row in zip(entries, frame.to_dict("records"), strict=True):
        if entry.kind == "anchor" and not entry.payload["name"].startswith("memory/"):
            phase, phase_id = entry.payload["name"], entry.id
        got = {key: (None if value is pd.NA or (isinstance(value, float) and pd.isna(value)) else value)
               for key, value in row.items() if key != "date"}  # fmt: skip
        assert got == expected_row(entry, phase, phase_id)


def test_both_stores_and_both_paths_make_the_same_frame(tmp_path: Path) -> None:
    on_file = open_tape("t", store=FileTapeStore(tmp_path))
    in_memory = open_tape("t", store=make_store("memory", tmp_path))
    fill(on_file)
    for entry in on_file.read():
        in_memory.append(entry)
    pd.testing.assert_frame_equal(on_file.to_frame(), entries_to_frame(on_file.read(), on_file), check_like=False)
    pd.testing.assert_frame_equal(
        on_file.to_frame().drop(columns="date"), in_memory.to_frame().drop(columns="date"), check_categorical=False
    )


def test_a_frame_of_nothing_has_the_columns(tmp_path: Path) -> None:
    frame = open_tape("empty", store=FileTapeStore(tmp_path)).to_frame()
    assert frame.empty and "content" in frame.columns


def test_the_accessor_slices_between_anchors(tape: Tape) -> None:
    frame = tape.to_frame()
    assert list(frame.tape.after("phase/impl")["id"]) == [e.id for e in tape.after_anchor("phase/impl")]
    assert list(frame.tape.between("session/start", "phase/impl")["id"]) == [
        e.id for e in tape.between_anchors("session/start", "phase/impl")
    ]
    assert set(frame.tape.phase("session/start")["kind"]) >= {"anchor", "tool_call", "system"}
    assert list(frame.tape.kinds("error", "system")["kind"]) == ["system", "error"]
    with pytest.raises(AnchorNotFoundError, match="'phase/none'"):
        frame.tape.after("phase/none")


def test_importing_the_package_is_enough_for_to_messages() -> None:
    program = (
        "import bub_nb\n"
        "tape = bub_nb.open_tape('t', store=bub_nb.MemoryTapeStore())\n"
        "tape.append_message({'role': 'user', 'content': 'hi'})\n"
        "print(tape.to_frame().tape.to_messages())\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str([{"role": "user", "content": "hi"}])


def test_the_accessor_turns_rows_back_into_messages(tape: Tape) -> None:
    rows = tape.to_frame().tape.between("session/start", "phase/impl")
    messages = rows.tape.to_messages()
    assert messages == [
        {"role": "user", "content": "read a.py"},
        {"role": "assistant", "content": "", "tool_calls": [CALL]},
        {"role": "tool", "content": "print('hi')", "tool_call_id": "call_1", "name": "fs.read"},
        {"role": "assistant", "content": "it prints hi"},
    ]
    assert rows.tape.entries() == tape.between_anchors("session/start", "phase/impl")


def test_read_tapes_puts_every_tape_in_one_frame(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BUB_HOME", str(tmp_path / "bub"))
    first = open_tape("first")
    fill(first)
    bub_append(tmp_path / "bub" / "tapes" / "second.jsonl", [TapeEntry.message({"role": "user", "content": "bub"})])
    frame = read_tapes()
    assert frame.columns[0] == "tape_name"
    assert frame.groupby("tape_name").size().to_dict() == {"first": len(first), "second": 1}
    assert read_tapes(tmp_path / "bub")["id"].tolist() == frame["id"].tolist()
    assert read_tapes(tmp_path / "bub" / "tapes")["id"].tolist() == frame["id"].tolist()


def test_odd_files_and_dates_from_other_writers_still_make_a_frame(tmp_path: Path) -> None:
    tapes = tmp_path / "tapes"
    tapes.mkdir()
    (tapes / "my..notes.jsonl").write_text(
        '{"id": 1, "kind": "message", "payload": {"role": "user", "content": "x"}, "meta": {}, "date": "yesterday"}\n'
        '{"id": 2, "kind": "message", "payload": {"role": "user", "content": "y"}, "meta": {}, "date": "2026-02-01"}\n'
    )
    frame = read_tapes(tmp_path)
    assert frame["tape_name"].tolist() == ["my..notes", "my..notes"]
    assert pd.isna(frame["date"][0]) and frame["date"][1] == pd.Timestamp("2026-02-01", tz="UTC")
    tape = open_tape(tapes / "my..notes.jsonl")
    assert [e.id for e in tape.query().between_dates("2026-01-31", "2026-02-02").all()] == [2]


json_scalars = st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=4) | st.just(12.0)
odd = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner, max_size=2),
    max_leaves=4,
)
function = st.fixed_dictionaries({}, optional={"name": odd, "arguments": odd}) | odd
calls = st.lists(st.fixed_dictionaries({"id": st.text(max_size=3)}, optional={"function": function}) | odd, max_size=3)
parts = st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=5)}), max_size=2)
usage = st.fixed_dictionaries({"usage": st.dictionaries(st.sampled_from(["prompt_tokens", "completion_tokens"]), odd)})
names = odd | st.sampled_from(["run", "phase/x", "memory/open"])
payloads = st.one_of(
    st.tuples(
        st.just("message"),
        st.fixed_dictionaries({}, optional={"role": odd, "name": odd, "content": odd | parts, "tool_calls": calls}),
    ),
    st.tuples(
        st.sampled_from(["anchor", "event"]),
        st.fixed_dictionaries({}, optional={"name": names, "state": odd, "data": odd | usage}),
    ),
    st.tuples(st.just("tool_call"), st.fixed_dictionaries({}, optional={"calls": calls, "content": odd})),
    st.tuples(
        st.sampled_from(["tool_result", "system", "error", "custom"]),
        st.fixed_dictionaries({}, optional={"results": st.lists(odd, max_size=2) | odd, "content": odd, "kind": odd}),
    ),
)


@settings(max_examples=80, deadline=None)
@given(rows=st.lists(payloads, max_size=8))
@example(rows=[("tool_result", {"results": [None]}), ("tool_result", {"results": [None, "a"]})])
def test_every_row_says_what_its_entry_says_whatever_the_payload(
    tmp_path_factory: pytest.TempPathFactory, rows: list[tuple[str, dict[str, Any]]]
) -> None:
    tape = open_tape("t", store=FileTapeStore(tmp_path_factory.mktemp("frames")))
    stored = tape.extend([TapeEntry(0, kind, payload) for kind, payload in rows])
    frame = tape.to_frame()  # through the decoded lines of the file
    pd.testing.assert_frame_equal(frame, entries_to_frame(stored, tape), check_dtype=False, check_categorical=False)
    phase, phase_id = None, None
    for entry, row in zip(stored, frame.to_dict("records"), strict=True):
        name = entry.payload.get("name")
        if entry.kind == "anchor" and isinstance(name, str) and name and not name.startswith("memory/"):
            phase, phase_id = name, entry.id
        got = {key: (None if value is pd.NA or (isinstance(value, float) and pd.isna(value)) else value)
               for key, value in row.items() if key != "date"}  # fmt: skip
        assert got == expected_row(entry, phase, phase_id)
