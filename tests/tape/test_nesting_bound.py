"""A tape line nested past 200 levels is no entry: refused on read in one line's worth of counting (a bad line),
never a ``RecursionError`` in a view, a frame or a search later; and nothing that deep is ever written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bub_nb.errors import TapeError
from bub_nb.tape import FileTapeStore, Tape
from bub_nb.tape._lines import MAX_DEPTH, too_deep


def nested_line(entry_id: int, levels: int) -> bytes:
    """An entry line whose own object is level 1, its payload level 2, then ``levels`` - 2 lists inside."""
    value = "[" * (levels - 2) + '"deep"' + "]" * (levels - 2)
    return f'{{"id": {entry_id}, "kind": "event", "payload": {{"x": {value}}}, "meta": {{}}, "date": "d"}}'.encode()


def plain_line(entry_id: int, text: str) -> bytes:
    payload = {"role": "user", "content": text}
    return json.dumps({"id": entry_id, "kind": "message", "payload": payload, "meta": {}, "date": "d"}).encode()


def test_the_rule_counts_levels_and_ignores_brackets_inside_strings() -> None:
    assert not too_deep(nested_line(1, MAX_DEPTH))
    assert too_deep(nested_line(1, MAX_DEPTH + 1))
    inside = json.dumps({"id": 1, "kind": "x", "payload": {"t": "[" * 5000}}).encode()
    assert not too_deep(inside)


@pytest.fixture
def tape(tmp_path: Path) -> Tape:
    folder = tmp_path / "tapes"
    folder.mkdir()
    lines = [plain_line(1, "before"), nested_line(2, 1000), nested_line(3, MAX_DEPTH), plain_line(4, "after")]
    lines += [plain_line(number, f"filler {number}") for number in range(5, 400)]
    (folder / "deep.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    return Tape("deep", FileTapeStore(folder))


def test_a_line_nested_past_the_bound_is_skipped_and_counted_and_every_reader_goes_on(tape: Tape) -> None:
    ids = [entry.id for entry in tape.read()]
    assert 2 not in ids and ids[:3] == [1, 3, 4]
    assert tape.stats().bad_lines == 1 and tape.stats().entries == 398
    frame = tape.to_frame()
    assert 2 not in set(frame["id"]) and len(frame) == 398
    assert [e.id for e in tape.iter_reverse()][-3:] == [4, 3, 1]
    assert [e.id for e in tape.search("after")] == [4]
    assert tape.view("full").messages  # builds without meeting the deep line
    assert tape.get(3).payload["x"]  # exactly at the bound: kept


def test_an_entry_nested_past_the_bound_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    tape = Tape("t", FileTapeStore(tmp_path / "tapes"))
    tape.append_message({"role": "user", "content": "hello"})
    deep: object = "x"
    for _ in range(MAX_DEPTH):
        deep = [deep]
    with pytest.raises(TapeError, match="levels deep") as refused:
        tape.append_event("tool.args", {"args": deep})
    assert "\n" not in str(refused.value)
    assert len(tape) == 1
