"""Bub's tape files open here, and tapes written here read with Bub's reader: both ways, line for line."""

from __future__ import annotations

import json
from pathlib import Path

from harness.tapes import bub_append, bub_read

from bub_nb.tape import TapeEntry, open_tape

# Seed 002 §6.3, verbatim: Bub's spacing, no date.
SEED_6_3 = """\
{"id": 1, "kind": "anchor", "payload": {"name": "session/start", "state": {"owner": "human"}}, "meta": {}}
{"id": 2, "kind": "message", "payload": {"role": "user", "content": "Hello"}, "meta": {}}
{"id": 3, "kind": "message", "payload": {"role": "assistant", "content": "Hi!"}, "meta": {}}
{"id": 4, "kind": "anchor", "payload": {"name": "phase/intro", "state": {"summary": "Greeting done"}}, "meta": {}}
{"id": 5, "kind": "event", "payload": {"name": "handoff", "data": {"name": "phase/intro"}}, "meta": {}}
"""

# Seed 002 §3.2: the two entries of a handoff, as Bub 0.5 writes them (json.dumps, ensure_ascii=False).
SEED_3_2 = [
    {
        "id": 6,
        "kind": "anchor",
        "payload": {
            "name": "phase/design-complete",
            "state": {"summary": "Database schema designed", "tables": 5, "next_steps": "Implement models"},
        },
        "meta": {"run_id": "run_abc123"},
        "date": "2026-02-21T12:00:00.123456+00:00",
    },
    {
        "id": 7,
        "kind": "event",
        "payload": {
            "name": "handoff",
            "data": {
                "name": "phase/design-complete",
                "state": {"summary": "...", "tables": 5, "next_steps": "..."},
            },
        },
        "meta": {"run_id": "run_abc123"},
        "date": "2026-02-21T12:00:00.123999+00:00",
    },
    {
        "id": 8,
        "kind": "message",
        "payload": {"role": "user", "content": "Now implement… ünïcödé 你好 ✓"},
        "meta": {},
        "date": "2026-02-21T12:00:01+00:00",
    },
    {"id": 9, "kind": "message", "payload": {"role": "assistant", "content": "Starting..."}, "timestamp": 1771675201.5},
]


def bub_tape(tmp_path: Path) -> Path:
    path = tmp_path / "tapes" / "0123456789abcdef__fedcba9876543210.jsonl"
    path.parent.mkdir()
    lines = SEED_6_3 + "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in SEED_3_2)
    path.write_text(lines, encoding="utf-8")
    return path


def test_a_bub_tape_opens_with_every_entry_and_anchor(tmp_path: Path) -> None:
    path = bub_tape(tmp_path)
    assert "ünïcödé" in path.read_text(encoding="utf-8")  # written as Bub writes, not escaped
    tape = open_tape(path)
    assert tape.name == "0123456789abcdef__fedcba9876543210"
    raw = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    entries = tape.read()
    assert [(e.id, e.kind, e.payload) for e in entries] == [(r["id"], r["kind"], r["payload"]) for r in raw]
    assert [e.meta for e in entries] == [r.get("meta", {}) for r in raw]
    assert entries[6].date == "2026-02-21T12:00:00.123999+00:00" and entries[8].when.timestamp() == 1771675201.5
    summaries = tape.anchors()
    assert [(s.id, s.name, s.state) for s in summaries] == [
        (1, "session/start", {"owner": "human"}),
        (4, "phase/intro", {"summary": "Greeting done"}),
        (6, "phase/design-complete", SEED_3_2[0]["payload"]["state"]),  # type: ignore[index]
    ]
    assert [e.id for e in tape.from_last_anchor()] == [7, 8, 9]
    assert [e.id for e in tape.between_anchors("session/start", "phase/intro")] == [2, 3]
    assert tape.info().entries == 9 and tape.info().bad_lines == 0


def test_a_tape_appended_here_reads_with_bubs_reader(tmp_path: Path) -> None:
    path = bub_tape(tmp_path)
    tape = open_tape(path)
    tape.handoff("phase/notebook", {"summary": "continued in Jupyter — ✓"})
    tape.append_message({"role": "user", "content": "from the notebook"}, cell=3, source="%%bub")
    tape.append_tool_call([{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}])
    tape.append_tool_result(["ok"])
    records = bub_read(path)
    assert [r["id"] for r in records] == list(range(1, 15))
    assert all(set(r) == {"id", "kind", "payload", "meta", "date"} for r in records[9:])
    assert records[9]["payload"] == {"name": "phase/notebook", "state": {"summary": "continued in Jupyter — ✓"}}
    assert records[11]["meta"] == {"cell": 3, "source": "%%bub"}
    assert bub_append(path, [TapeEntry.message({"role": "assistant", "content": "bub again"})])[0].id == 15
    assert tape.read()[-1].payload["content"] == "bub again" and tape.last_id == 15
    assert [a.name for a in tape.anchors()][-1] == "phase/notebook"
