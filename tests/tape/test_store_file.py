"""Tape files on disk: the line format, permissions, crashes, bad lines and writers in other processes."""

from __future__ import annotations

import multiprocessing
import os
import stat
import time
from pathlib import Path

import orjson
import pytest
from harness.tapes import (
    AppendOnlyFileStore,
    bub_append,
    bub_read,
    bub_writer_process,
    file_lines,
    store_writer_process,
)

from bub_nb.errors import TapeError, TapeNameError
from bub_nb.tape import FileTapeStore, TapeEntry, open_tape
from bub_nb.tape.forks.merge import merge_tapes


def message(text: str) -> TapeEntry:
    return TapeEntry.message({"role": "user", "content": text})


@pytest.fixture
def store(tmp_path: Path) -> AppendOnlyFileStore:
    return AppendOnlyFileStore(tmp_path / "tapes")


def test_each_entry_is_one_json_line_with_bub_fields(store: AppendOnlyFileStore) -> None:
    store.append("t", [TapeEntry.anchor("session/start", {"owner": "human"}), message("hi")])
    records = [orjson.loads(line) for line in file_lines(store.path_for("t"))]
    assert [list(r) for r in records] == [["id", "kind", "payload", "meta", "date"]] * 2
    assert records[0]["payload"] == {"name": "session/start", "state": {"owner": "human"}}
    assert store.path_for("t") == store.directory / "t.jsonl"


def test_tape_files_are_private_whatever_the_umask(store: AppendOnlyFileStore) -> None:
    old = os.umask(0)
    try:
        store.append("t", [TapeEntry.anchor("session/start"), message("secret talk")])
    finally:
        os.umask(old)
    assert stat.S_IMODE(store.path_for("t").stat().st_mode) == 0o600
    assert stat.S_IMODE(Path(str(store.path_for("t")) + ".idx").stat().st_mode) == 0o600


def test_a_torn_last_line_is_set_aside_and_the_next_append_starts_a_fresh_line(store: AppendOnlyFileStore) -> None:
    path = store.path_for("t")
    store.append("t", [message("one"), message("two")])
    whole = TapeEntry(3, "message", {"role": "user", "content": "three"}).to_line()
    with path.open("ab") as handle:  # a crash in the middle of writing entry 3
        handle.write(whole[: len(whole) // 2])
    info = open_tape("t", store=store).info()
    assert info.torn_tail_bytes == len(whole) // 2 and info.entries == 2

    stored = store.append("t", [message("after the crash")])
    assert stored[0].id == 3
    lines = file_lines(path)
    assert lines[2] == whole[: len(whole) // 2] and orjson.loads(lines[3])["id"] == 3
    assert [e.id for e in store.read("t")] == [1, 2, 3]
    fresh = open_tape("t", store=FileTapeStore(store.directory)).info()
    assert (fresh.bad_lines, fresh.torn_tail_bytes, fresh.entries) == (1, 0, 3)


def test_a_whole_entry_missing_only_its_line_break_keeps_its_id(store: AppendOnlyFileStore) -> None:
    path = store.path_for("t")
    store.append("t", [message("one")])
    with path.open("ab") as handle:
        handle.write(TapeEntry(2, "message", {"role": "user", "content": "two"}).to_line().rstrip(b"\n"))
    assert store.append("t", [message("three")])[0].id == 3
    assert [e.payload["content"] for e in store.read("t")] == ["one", "two", "three"]


def test_undecodable_lines_are_skipped_counted_and_kept(store: AppendOnlyFileStore) -> None:
    path = store.path_for("t")
    store.append("t", [message("one")])
    with path.open("ab") as handle:
        handle.write(b"{not json\n\n[1, 2]\n" + b'{"id": "x", "kind": "message", "payload": {}}\n')
    store.append("t", [message("two")])
    tape = open_tape("t", store=FileTapeStore(store.directory))
    assert [e.payload["content"] for e in tape.read()] == ["one", "two"]
    assert tape.info().bad_lines == 3
    assert b"{not json" in path.read_bytes()
    assert [e.id for e in tape.read()] == [1, 2]


def test_lines_python_json_writes_still_read(store: AppendOnlyFileStore) -> None:
    path = store.path_for("t")
    path.parent.mkdir(parents=True)
    bub_append(path, [TapeEntry.tool_result([float("nan"), 2**70])])
    [entry] = store.read("t")
    assert entry.payload["results"][1] == 2**70 and entry.payload["results"][0] != entry.payload["results"][0]
    assert store.append("t", [TapeEntry.tool_result([2**70])])[0].payload == {"results": [2**70]}
    assert store.read("t")[-1].payload == {"results": [2**70]}


def test_legacy_lines_with_a_float_timestamp_load(store: AppendOnlyFileStore) -> None:
    path = store.path_for("t")
    path.parent.mkdir(parents=True)
    path.write_text(
        '{"id": 1, "kind": "anchor", "payload": {"name": "session/start"}, "meta": {}, "timestamp": 1771660800.5}\n'
        '{"id": 2, "kind": "message", "payload": {"role": "user", "content": "old"}, "timestamp": 1e300}\n'
    )
    first, second = store.read("t")
    assert first.when.timestamp() == 1771660800.5 and first.when.utcoffset() is not None
    assert second.meta == {} and second.date == ""  # no date a frame can place, as a garbled one


def test_two_processes_appending_1500_entries_each_never_collide(tmp_path: Path) -> None:
    directory = tmp_path / "tapes"
    context = multiprocessing.get_context("spawn")
    writers = [context.Process(target=store_writer_process, args=(str(directory), "t", 1500, w)) for w in "ab"]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(120)
        assert writer.exitcode == 0
    lines = file_lines(directory / "t.jsonl")
    records = [orjson.loads(line) for line in lines]  # no broken line: every line decodes
    assert len(records) == 3000
    assert [r["id"] for r in records] == list(range(1, 3001))
    for label in "ab":
        mine = [r for r in records if r["kind"] == "message" and r["meta"].get("writer") == label]
        assert [int(r["payload"]["content"].split()[1]) for r in mine] == [n for n in range(1500) if n % 97]
    tape = open_tape("t", store=FileTapeStore(directory))
    assert len(tape.anchors(limit=None)) == 2 * len(range(0, 1500, 97))
    assert tape.info().entries == 3000 and tape.info().bad_lines == 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_can_append_to_a_tape_its_parent_opened(store: AppendOnlyFileStore) -> None:
    store.append("t", [message("parent")])
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        try:
            store.append("t", [message("child")])
        finally:
            os._exit(0)
    os.waitpid(child, 0)
    store.append("t", [message("parent again")])
    assert [e.payload["content"] for e in store.read("t")] == ["parent", "child", "parent again"]
    assert [e.id for e in store.read("t")] == [1, 2, 3]


def test_our_appends_continue_after_what_bub_appended(store: AppendOnlyFileStore) -> None:
    path = store.path_for("t")
    store.append("t", [TapeEntry.anchor("session/start"), message("ours")])
    bub_append(path, [message("from bub"), TapeEntry.anchor("phase/bub", {"by": "bub"}), message("after")])
    tape = open_tape("t", store=store)
    assert tape.from_last_anchor()[0].payload["content"] == "after"
    stored = tape.append_message({"role": "assistant", "content": "ours again"})
    assert stored.id == 6
    assert [r["id"] for r in bub_read(path)] == [1, 2, 3, 4, 5, 6]
    bub_append(path, [message("bub once more")])
    assert [r["id"] for r in bub_read(path)] == list(range(1, 8))
    assert [a.name for a in tape.anchors()] == ["session/start", "phase/bub"]


def test_a_bub_writer_appending_while_we_append_never_breaks_a_line(tmp_path: Path) -> None:
    """What holds while a lockless Bub-style writer runs beside us.

    Guaranteed: every line stays whole (both sides append whole lines with O_APPEND), our own ids
    are unique and increasing, our index agrees with a full read, and once Bub stops our next id
    follows the highest id in the file. Not guaranteed: Bub's ids, since Bub picks "last id + 1"
    without the lock and may pick an id we are writing at that moment.
    """
    store = FileTapeStore(tmp_path / "tapes")
    path = store.path_for("t")
    store.append("t", [TapeEntry.anchor("session/start")])
    bub = multiprocessing.get_context("spawn").Process(target=bub_writer_process, args=(str(path), 200, 25))
    bub.start()
    ours: list[TapeEntry] = []
    while bub.is_alive() or len(ours) < 200:
        entry = TapeEntry.anchor(f"ours/{len(ours)}") if len(ours) % 30 == 0 else message("k")
        ours.extend(store.append("t", [entry]))
        time.sleep(0.001)  # Bub re-reads the whole file per append; leave it room to catch up
    bub.join(60)
    assert bub.exitcode == 0

    # Every line is whole. (A line break of ours may land alone if Bub's line was still being
    # written when we looked and stayed unfinished for a while; blank lines are skipped by both readers.)
    records = [orjson.loads(line) for line in file_lines(path) if line.strip()]
    assert len(records) == 1 + 200 + len(ours)
    bub_rows = [row for row, r in enumerate(records) if "bub" in str(r["payload"])]
    assert len(bub_rows) == 200 and bub_rows[-1] - bub_rows[0] > 200  # the two writers really overlapped
    our_ids = [e.id for e in ours]
    assert our_ids == sorted(set(our_ids))
    fresh = open_tape("t", store=FileTapeStore(store.directory))
    for tape in (open_tape("t", store=store), fresh):
        assert tape.stats().entries == len(records) and tape.stats().bad_lines == 0
        anchor_ids = [r["id"] for r in records if r["kind"] == "anchor"]
        assert [a.id for a in tape.store.anchors("t")] == anchor_ids
    after = store.append("t", [message("alone again")])[0]
    assert after.id == max(r["id"] for r in records) + 1
    ids = [r["id"] for r in records] + [after.id]
    if ids != sorted(set(ids)):  # Bub picked ids we were writing: no entry read serves them, until a merge
        with pytest.raises(TapeError, match="ids out of order"):
            fresh.read()
        merge_tapes(path)
    merged = open_tape("t", store=FileTapeStore(store.directory)).read()
    assert [e.id for e in merged] == sorted({e.id for e in merged})  # strictly increasing
    assert sum(e.name != "merge" for e in merged) == len(records) + 1  # every entry kept


def test_default_home_is_bub_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("BUB_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    tape = open_tape("named")
    tape.append_message({"role": "user", "content": "x"})
    assert tape.path == tmp_path / "user" / ".bub" / "tapes" / "named.jsonl"
    assert tape.path.exists()
    monkeypatch.setenv("BUB_HOME", str(tmp_path / "elsewhere"))
    assert open_tape("named").path == tmp_path / "elsewhere" / "tapes" / "named.jsonl"


def test_a_lone_surrogate_is_stored_as_an_escape_and_reads_back(store: AppendOnlyFileStore) -> None:
    [stored] = store.append("t", [message("half a pair \udc00 here")])
    assert b"\\udc00" in store.path_for("t").read_bytes()
    assert store.read("t") == [stored] and stored.payload["content"] == "half a pair \udc00 here"
    assert bub_read(store.path_for("t"))[0]["payload"]["content"] == "half a pair \udc00 here"


@pytest.mark.parametrize("name", ["../escape", "a/../../escape", "/tmp/escape", "..", ".", "", "a\\b", "x" * 201])
def test_the_store_refuses_a_name_that_would_leave_its_folder(tmp_path: Path, name: str) -> None:
    store = FileTapeStore(tmp_path / "tapes")
    with pytest.raises(TapeNameError) as caught:
        store.append(name, [message("x")])
    assert repr(name) in str(caught.value)
    assert not list(tmp_path.rglob("*.jsonl"))


def test_the_store_takes_names_of_files_bub_could_have_made(tmp_path: Path) -> None:
    store = FileTapeStore(tmp_path)
    store.append("my..notes", [message("x")])
    assert store.list_tapes() == ["my..notes"] and (tmp_path / "my..notes.jsonl").exists()


@pytest.mark.parametrize("block", [7, 64, 1 << 18])
def test_reading_newest_first_in_any_block_size_gives_every_entry_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    import bub_nb.tape.stores._tape_file as file_store

    monkeypatch.setattr(file_store, "_REVERSE_BLOCK", block)
    monkeypatch.setattr(file_store, "_SEARCH_BLOCK", block)
    store = FileTapeStore(tmp_path)
    tape = open_tape("t", store=store)
    for number in range(40):  # short lines, and some far longer than a small block
        tape.append_message({"role": "user", "content": f"note {number} " + "x" * (number * 7)})
    newest_first = [entry.id for entry in reversed(tape.read())]
    assert [entry.id for entry in store.iter_reverse("t")] == newest_first
    assert [entry.id for entry in store.iter_reverse_matching("t", [b"note"])] == newest_first
