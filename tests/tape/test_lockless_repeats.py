"""A writer that takes no lock (Bub 0.5) repeating an id beside an open reader: that reader reads on, with one
line saying so, and appends after the highest id; a fresh open of such a tape still refuses it, naming the merge."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import orjson
import pytest

from bub_nb.errors import BubNbWarning, TapeError, TapeOrderWarning
from bub_nb.tape import open_tape
from bub_nb.tape.stores.file import FileTapeStore


def bub_line(path: Path, entry_id: int, content: str) -> None:
    """One whole line as Bub 0.5 appends it: its own id, no lock, one write."""
    record = {"id": entry_id, "kind": "message", "payload": {"role": "user", "content": content}, "meta": {},
              "date": "2026-01-01T00:00:00+00:00"}  # fmt: skip
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, orjson.dumps(record) + b"\n")
    finally:
        os.close(fd)


def ids_of(path: Path) -> list[int]:
    return [orjson.loads(line)["id"] for line in path.read_bytes().splitlines() if line.strip()]


@pytest.fixture
def reading(tmp_path: Path) -> tuple[Path, FileTapeStore]:
    """A tape this reader wrote and read, to which Bub then appends an id this reader already used."""
    store = FileTapeStore(tmp_path)
    tape = open_tape("shared", store=store)
    tape.append_message({"role": "user", "content": "ours 0"})
    tape.append_message({"role": "user", "content": "ours 1"})
    assert [e.id for e in tape.read()] == [1, 2]
    path = tmp_path / "shared.jsonl"
    bub_line(path, 2, "bub picked 2 too")  # Bub read id 1, took 2 while we wrote 2
    return path, store


def test_the_open_reader_reads_past_a_repeat_with_one_warning_and_appends_after_the_highest(
    reading: tuple[Path, FileTapeStore],
) -> None:
    path, store = reading
    tape = open_tape("shared", store=store)
    with pytest.warns(TapeOrderWarning) as caught:
        entries = tape.read()
    assert len(caught) == 1 and issubclass(caught[0].category, BubNbWarning)
    text = str(caught[0].message)
    assert "\n" not in text and "bub-nb tapes merge" in text and "2 follows 2" in text
    assert str(path.parent) not in text  # the tape by name, no path
    assert [(e.id, e.payload.get("content")) for e in entries][1:] == [(2, "ours 1"), (2, "bub picked 2 too")]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once: the next reads and appends say nothing more
        after = tape.append_message({"role": "user", "content": "ours 2"})
        bub_line(path, 4, "bub after ours")
        assert [e.id for e in tape.read()] == [1, 2, 2, 3, 4]
        assert tape.handoff("phase/on", {"summary": "carried on"})[0].id == 5
    assert after.id == 3


def test_a_fresh_open_still_refuses_the_repeat_in_one_line_naming_the_merge(
    reading: tuple[Path, FileTapeStore],
) -> None:
    path, store = reading
    with pytest.warns(TapeOrderWarning):
        open_tape("shared", store=store).read()
    fresh = open_tape("shared", store=FileTapeStore(path.parent))  # another process's first look
    for read in (fresh.read, lambda: fresh.get(2), lambda: list(fresh.iter_reverse()), lambda: fresh.view_of_turn(-1)):
        with pytest.raises(TapeError, match="'shared' has ids out of order: 2 follows 2") as refused:
            read()
        assert "\n" not in str(refused.value) and "bub-nb tapes merge" in str(refused.value)


def test_a_repeat_already_in_the_file_at_the_first_look_is_refused_even_when_more_lines_follow(
    reading: tuple[Path, FileTapeStore],
) -> None:
    path, _ = reading
    fresh = open_tape("shared", store=FileTapeStore(path.parent))
    with pytest.raises(TapeError, match="out of order"):
        fresh.read()
    bub_line(path, 3, "later")  # lines after it do not make the first look's refusal a live repeat
    with pytest.raises(TapeError, match="out of order"):
        fresh.read()


def test_a_file_replaced_by_one_with_repeats_is_refused_by_the_reader_that_had_it_open(tmp_path: Path) -> None:
    store = FileTapeStore(tmp_path)
    tape = open_tape("shared", store=store)
    tape.append_message({"role": "user", "content": "one"})
    assert len(tape.read()) == 1
    path = tmp_path / "shared.jsonl"
    other = tmp_path / "other.jsonl"
    other.write_bytes(path.read_bytes() + path.read_bytes())  # a union merge's result, written as a new file
    os.replace(other, path)
    with pytest.raises(TapeError, match="1 follows 1"):
        tape.read()


def test_the_merge_then_serves_every_entry_with_increasing_ids(reading: tuple[Path, FileTapeStore]) -> None:
    from bub_nb.cli import main

    path, _ = reading
    assert ids_of(path) == [1, 2, 2]
    assert main(["tapes", "merge", str(path)]) == 0
    merged = open_tape(path, store=FileTapeStore(path.parent)).read()
    ids = [e.id for e in merged]
    assert ids == sorted(set(ids))
    contents = [e.payload.get("content") for e in merged if e.kind == "message"]
    assert contents == ["ours 0", "ours 1", "bub picked 2 too"]
