"""The anchor index sidecar: what it holds, how it follows the tape, and when it is rebuilt."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest
from harness.tapes import AppendOnlyFileStore, bub_append, file_lines

from bub_nb.tape import FileTapeStore, Tape, TapeEntry, open_tape


def message(text: str) -> TapeEntry:
    return TapeEntry.message({"role": "user", "content": text})


def sidecar(tape: Tape) -> Path:
    assert tape.path is not None
    return tape.path.with_name(tape.path.name + ".idx")


def index_records(path: Path) -> list[object]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def reopened(tape: Tape) -> Tape:
    """The same tape through a new store: what a fresh kernel sees, with nothing in memory."""
    assert tape.path is not None
    return open_tape(tape.name, store=FileTapeStore(tape.path.parent))


@pytest.fixture
def tape(tmp_path: Path) -> Tape:
    tape = open_tape("t", store=AppendOnlyFileStore(tmp_path / "tapes"))
    tape.ensure_bootstrap_anchor()
    for number in range(30):
        tape.append_message({"role": "user", "content": f"m{number}"})
        if number % 10 == 9:
            tape.handoff(f"phase/{number}", {"n": number})
    return tape


def test_the_sidecar_sits_beside_the_tape_where_bub_does_not_look(tape: Tape) -> None:
    path = sidecar(tape)
    assert path.name == "t.jsonl.idx" and not path.name.endswith(".jsonl")
    assert tape._base_store.list_tapes() == ["t"]


def test_the_sidecar_holds_anchor_offsets_the_last_id_and_the_size(tape: Tape) -> None:
    records = index_records(sidecar(tape))
    ids = [i for r in records if isinstance(r, list) and r[0] == "a" for i in r[1]]
    offsets = [o for r in records if isinstance(r, list) and r[0] == "a" for o in r[2]]
    assert ids == [a.id for a in tape.anchors(limit=None)]
    data = tape.path.read_bytes()  # type: ignore[union-attr]
    for entry_id, offset in zip(ids, offsets, strict=True):
        line = data[offset : data.index(b"\n", offset)]
        assert orjson.loads(line)["id"] == entry_id and orjson.loads(line)["kind"] == "anchor"
    checkpoint = [r for r in records if isinstance(r, list) and r[0] == "c"][-1]
    assert checkpoint[1:3] == [len(data), tape.last_id]


def test_a_new_reader_uses_the_index_instead_of_reading_the_tape(tape: Tape) -> None:
    path = tape.path
    assert path is not None
    anchor = tape.anchors()[-1]
    expected = tape.from_last_anchor()
    # Garble every line before the last anchor in place (same length, same line breaks). A reader
    # that scanned the file would count bad lines; one that seeks from the index never sees them.
    data = bytearray(path.read_bytes())
    head = data.index(b'"id":' + str(anchor.id).encode())
    cut = data.rindex(b"\n", 0, head)
    for position in range(cut):
        if data[position] != ord("\n"):
            data[position] = ord("#")
    with path.open("r+b") as handle:
        handle.write(bytes(data[:cut]))
    fresh = reopened(tape)
    assert fresh.from_last_anchor() == expected
    assert [a.name for a in fresh.anchors()] == [a.name for a in tape.anchors()]
    assert fresh.info().bad_lines == 0


def test_the_index_extends_when_bub_appends(tape: Tape) -> None:
    before = sidecar(tape).read_bytes()
    bub_append(tape.path, [message("bub 1"), TapeEntry.anchor("phase/bub", {"by": "bub"}), message("bub 2")])  # type: ignore[arg-type]
    fresh = reopened(tape)
    assert [e.payload.get("content") for e in fresh.from_last_anchor()] == ["bub 2"]
    assert fresh.anchors()[-1].name == "phase/bub" and fresh.last_id == 41
    after = sidecar(tape).read_bytes()
    assert after.startswith(before) and len(after) > len(before)  # extended, not rebuilt
    checkpoint = [r for r in index_records(sidecar(tape)) if isinstance(r, list) and r[0] == "c"][-1]
    assert checkpoint[1:3] == [tape.path.stat().st_size, 41]  # type: ignore[union-attr]
    assert tape.append_message({"role": "user", "content": "ours"}).id == 42


def test_a_replaced_file_gets_a_new_index(tape: Tape) -> None:
    path = tape.path
    assert path is not None
    other = open_tape("other", store=FileTapeStore(path.parent))
    other.handoff("other/start", {"k": 1})
    other.append_message({"role": "user", "content": "from the other file"})
    os.replace(other.path, path)  # type: ignore[arg-type]
    fresh = reopened(tape)
    assert [a.name for a in fresh.anchors()] == ["other/start"]
    assert fresh.from_last_anchor()[-1].payload["content"] == "from the other file"
    header = index_records(sidecar(tape))[0]
    assert isinstance(header, dict) and header["ino"] == path.stat().st_ino
    # the tape object that had the old file in memory notices too
    assert [a.name for a in tape.anchors()] == ["other/start"]


def test_a_truncated_file_gets_a_new_index(tape: Tape) -> None:
    path = tape.path
    assert path is not None
    lines = file_lines(path)
    with path.open("r+b") as handle:  # same inode, fewer lines: someone cut the file
        handle.truncate(sum(len(line) + 1 for line in lines[:13]))
    for reader in (reopened(tape), tape):
        assert reader.last_id == 13
        assert [a.name for a in reader.anchors()] == ["session/start", "phase/9"]


def test_a_file_rewritten_in_place_to_the_same_size_is_noticed(tape: Tape) -> None:
    """A tape started over under the same inode and grown back to the same size has other last bytes.

    (Edits before the end of the file are not looked for: tapes are append-only, and checking
    them would mean reading the whole file.)
    """
    path = tape.path
    assert path is not None
    lines = file_lines(path)
    last = orjson.loads(lines[-1])
    later = {**last, "kind": "anchor", "date": last["date"].replace("20", "30", 1)}  # written at another time
    shorter = orjson.dumps({**later, "payload": {"name": ""}})
    new_last = orjson.dumps({**later, "payload": {"name": "x" * (len(lines[-1]) - len(shorter))}})
    assert len(new_last) == len(lines[-1])
    with path.open("r+b") as handle:
        handle.write(b"\n".join([*lines[:-1], new_last]) + b"\n")
    for reader in (reopened(tape), tape):
        assert reader.anchors()[-1].id == last["id"] and reader.anchors()[-1].name.startswith("xxx")


def test_a_damaged_sidecar_is_rebuilt(tape: Tape) -> None:
    expected = [a.name for a in tape.anchors(limit=None)]
    for garbage in (b"", b"not json\n", b'{"index": "bub_nb", "version": 2}\n["c", 1, 2]\n', b'[1, 2, 3]\n["a", 1]\n'):
        sidecar(tape).write_bytes(garbage)
        fresh = reopened(tape)
        assert [a.name for a in fresh.anchors(limit=None)] == expected
        assert fresh.info().entries == tape.info().entries


def test_the_index_agrees_with_a_full_read_after_many_appends(tmp_path: Path) -> None:
    tape = open_tape("long", store=FileTapeStore(tmp_path))
    for number in range(3000):
        if number % 50 == 0:
            tape.append(TapeEntry.anchor(f"phase/{number}" if number % 200 else f"memory/{number}"))
        else:
            tape.append_message({"role": "user", "content": f"m{number}"})
    everything = tape.read()
    fresh = reopened(tape)
    assert [a.id for a in fresh.anchors(limit=None)] == [e.id for e in everything if e.kind == "anchor"]
    for start in (1, 2, 1023, 1024, 1025, 2048, 2999, 3000):
        assert fresh.read(start, start + 5) == everything[start - 1 : start + 4]
    last_phase = max(e.id for e in everything if e.kind == "anchor" and not e.payload["name"].startswith("memory/"))
    assert fresh.from_last_anchor() == everything[last_phase:]


def test_a_sidecar_record_torn_by_a_kill_does_not_swallow_the_next_one(tape: Tape) -> None:
    with sidecar(tape).open("ab") as handle:  # a writer killed inside its anchor record
        handle.write(b'["a",[99],[12')
    tape.handoff("phase/after-the-kill")
    fresh = reopened(tape)
    assert fresh.anchors()[-1].name == "phase/after-the-kill"
    assert [a.id for a in fresh.anchors(limit=None)] == [e.id for e in tape.read() if e.kind == "anchor"]
    lines = sidecar(tape).read_bytes().splitlines()
    assert b'["a",[99],[12' in lines  # the torn record kept its own line


def test_a_sidecar_that_lost_an_anchor_record_is_rebuilt(tape: Tape) -> None:
    lines = sidecar(tape).read_bytes().splitlines()
    anchor_records = [line for line in lines if line.startswith(b'["a"')]
    sidecar(tape).write_bytes(b"\n".join(line for line in lines if line != anchor_records[-1]) + b"\n")
    fresh = reopened(tape)
    assert [a.id for a in fresh.anchors(limit=None)] == [e.id for e in tape.read() if e.kind == "anchor"]


def test_a_long_session_of_handoffs_keeps_the_sidecar_compact(tmp_path: Path) -> None:
    tape = open_tape("long", store=FileTapeStore(tmp_path))
    for number in range(400):
        tape.handoff(f"phase/{number}", {"n": number})
        tape.append_message({"role": "user", "content": f"m{number}"})
    lines = sidecar(tape).read_bytes().splitlines()
    assert len(lines) < 600  # each handoff appends records; now and then they are rewritten as one block
    fresh = reopened(tape)
    assert [a.name for a in fresh.anchors(limit=None)] == [f"phase/{n}" for n in range(400)]
    assert [e.payload["content"] for e in fresh.from_last_anchor(kinds=("message",))] == ["m399"]
