"""The memory zone (docs/concepts.md#memory-zone), on real tapes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from harness.tapes import CountingStore

import bub_nb.memory
from bub_nb.context import build_view
from bub_nb.memory import DailyNote, MemorySnapshot, MemoryZone, MemoryZoneError
from bub_nb.tape import MemoryTapeStore, Tape, TapeEntry, open_tape


def new_tape(store: MemoryTapeStore | None = None) -> Tape:
    return open_tape("mem", store=store or MemoryTapeStore())


def zone(tape: Tape, version: int, *events: TapeEntry) -> None:
    tape.append(TapeEntry.anchor("memory/open", {"version": version}))
    tape.extend(list(events))
    tape.append(TapeEntry.anchor("memory/seal", {"version": version}))


def long_term(content: str) -> TapeEntry:
    return TapeEntry.event("memory.long_term", {"content": content, "updated_at": "2026-02-10T10:00:00+00:00"})


def daily(date: str, content: str) -> TapeEntry:
    return TapeEntry.event(
        "memory.daily", {"date": date, "content": content, "updated_at": "2026-02-10T10:05:00+00:00"}
    )


def seed_5_1() -> Tape:
    tape = new_tape()
    tape.append(TapeEntry.anchor("session/start", {"owner": "human"}))
    zone(tape, 1)
    tape.append_message({"role": "user", "content": "hello"})
    tape.append_message({"role": "assistant", "content": "Hi! How can I help?"})
    return tape


def seed_5_2() -> Tape:
    tape = seed_5_1()
    tape.append_message({"role": "user", "content": "remember: I like Python"})
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "memory_save", "arguments": '{"content": "User likes Python"}'},
    }
    tape.append_tool_call([call])
    tape.append_tool_result(["saved to long-term memory"])
    zone(tape, 2, long_term("User likes Python"))
    tape.append_message({"role": "assistant", "content": "Got it, I'll remember that!"})
    return tape


def seed_5_3() -> Tape:
    tape = seed_5_2()
    zone(tape, 3, long_term("User likes Python"), daily("2026-02-09", "..."), daily("2026-02-10", "..."))
    return tape


def test_seed_5_1_an_empty_zone_reads_as_empty_memory() -> None:
    assert MemoryZone(seed_5_1()).read() == MemorySnapshot(version=1, long_term="", dailies=())


def test_seed_5_2_the_newer_zone_supersedes_the_old_one() -> None:
    assert MemoryZone(seed_5_2()).read() == MemorySnapshot(2, "User likes Python", ())


def test_seed_5_3_daily_notes_read_newest_first() -> None:
    assert MemoryZone(seed_5_3()).read() == MemorySnapshot(
        3, "User likes Python", (DailyNote("2026-02-10", "..."), DailyNote("2026-02-09", "..."))
    )


def test_seed_5_2_conversation_view_leaves_the_memory_zone_out() -> None:
    view = build_view(seed_5_2())
    assert [m["role"] for m in view.messages] == [
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert view.messages[0]["content"] == '[Anchor created: session/start]: {"owner": "human"}'
    assert not any("memory" in str(m.get("content")) and m["role"] != "tool" for m in view.messages[1:])


def test_get_context_renders_the_seed_3_5_block() -> None:
    tape = new_tape()
    zone(
        tape,
        1,
        long_term("User prefers Python 3.12. Always use type hints."),
        daily("2026-02-10", "# 2026-02-10\n\n- Implemented tape memory zone"),
        daily("2026-02-09", "# 2026-02-09\n\n- Designed memory architecture"),
    )
    assert tape.memory.get_context(today="2026-02-10") == (
        "<memory>\n"
        "Use `memory.save` to update long-term memory, `memory.daily` to append to\n"
        "daily notes, and `memory.recall` to search past memories.\n"
        "\n"
        "## Long-term Memory\n"
        "User prefers Python 3.12. Always use type hints.\n"
        "\n"
        "## Today's Notes\n"
        "# 2026-02-10\n"
        "\n"
        "- Implemented tape memory zone\n"
        "\n"
        "## Recent Notes\n"
        "### 2026-02-09\n"
        "# 2026-02-09\n"
        "\n"
        "- Designed memory architecture\n"
        "</memory>"
    )


def test_recent_notes_are_the_seven_days_before_today() -> None:
    tape = new_tape()
    zone(tape, 1, *(daily(f"2026-02-{day:02d}", f"note {day}") for day in range(1, 13)))
    block = tape.memory.get_context(today="2026-02-10")
    recent = block.split("## Recent Notes\n", 1)[1]
    assert [line for line in recent.splitlines() if line.startswith("### ")] == [
        f"### 2026-02-0{day}" for day in range(9, 2, -1)
    ]
    assert "## Today's Notes\nnote 10" in block
    assert "note 11" not in block and "note 2\n" not in block


def test_empty_memory_adds_nothing_to_the_prompt() -> None:
    tape = new_tape()
    tape.memory.ensure()
    assert tape.memory.get_context() == ""


def test_ensure_writes_the_empty_zone_of_seed_5_1_once() -> None:
    tape = new_tape()
    tape.ensure_bootstrap_anchor()
    before = tape.last_id
    assert tape.memory.ensure() == MemorySnapshot(1)
    tape.memory.ensure()
    written = tape.read(before + 1)
    assert [(e.kind, e.name, e.payload.get("data")) for e in written] == [
        ("event", "memory.open", {"version": 1}),
        ("event", "memory.seal", {"version": 1}),
    ]


def test_a_memory_zone_writes_no_anchor_so_the_phase_goes_on_for_bub_as_for_the_notebook() -> None:
    """Bub starts its context after the last anchor of any name: a zone bounded by anchors would cut the phase."""
    tape = new_tape()
    tape.handoff("phase/plan", {"summary": "planned"})
    tape.memory.save_long_term("likes tea")
    tape.memory.append_daily("met the class", date="2026-02-10")
    assert [e.name for e in tape.read(kinds=("anchor",))] == ["phase/plan"]
    assert tape.memory.read() == MemorySnapshot(
        2, "likes tea", (DailyNote("2026-02-10", "# 2026-02-10\n\nmet the class"),)
    )


def test_zones_an_older_tape_bounded_by_anchors_read_and_the_next_zone_supersedes_them() -> None:
    tape = new_tape()
    zone(tape, 3, long_term("from an older bub_nb"))
    assert tape.memory.read() == MemorySnapshot(3, "from an older bub_nb")
    assert tape.memory.save_long_term("written now").version == 4
    assert tape.memory.read() == MemorySnapshot(4, "written now")
    assert [(r.version, r.current) for r in tape.memory.history()] == [(3, False), (4, True)]


def test_each_change_appends_a_new_zone_and_never_rewrites() -> None:
    tape = new_tape()
    memory = tape.memory
    memory.ensure()
    memory.save_long_term("User likes Python")
    memory.append_daily("- Implemented tape memory zone", date="2026-02-10")
    snapshot = memory.append_daily("- Fixed model_runner tests", date="2026-02-10")
    assert snapshot == memory.read()
    assert snapshot == MemorySnapshot(
        4,
        "User likes Python",
        (DailyNote("2026-02-10", "# 2026-02-10\n\n- Implemented tape memory zone\n- Fixed model_runner tests"),),
    )
    bounds = [
        (e.name, e.payload["data"]["version"])
        for e in tape.read(kinds=("event",))
        if "version" in e.payload.get("data", {})
    ]
    assert bounds == [(f"memory.{kind}", v) for v in (1, 2, 3, 4) for kind in ("open", "seal")]
    last_zone = tape.read(tape.last_id - 3)
    assert [e.name for e in last_zone] == ["memory.open", "memory.long_term", "memory.daily", "memory.seal"]
    assert last_zone[2].payload["data"]["date"] == "2026-02-10"
    assert "updated_at" in last_zone[1].payload["data"]


def test_save_long_term_replaces_the_note() -> None:
    tape = new_tape()
    tape.memory.save_long_term("likes tea")
    assert tape.memory.save_long_term("likes coffee").long_term == "likes coffee"


def test_append_daily_defaults_to_today_in_utc() -> None:
    from datetime import UTC, datetime

    tape = new_tape()
    today = datetime.now(UTC).date().isoformat()
    assert tape.memory.append_daily("- wrote tests").dailies == (DailyNote(today, f"# {today}\n\n- wrote tests"),)


def test_a_seal_without_its_open_and_an_open_without_its_seal_are_ignored() -> None:
    tape = new_tape()
    zone(tape, 4, long_term("sealed v4"))
    tape.append(TapeEntry.anchor("memory/seal", {"version": 5}))
    tape.append(TapeEntry.anchor("memory/open", {"version": 6}))
    tape.append_event("memory.long_term", {"content": "crashed before sealing"})
    assert tape.memory.read() == MemorySnapshot(4, "sealed v4")
    assert tape.memory.save_long_term("after the crash").version == 7
    assert tape.memory.read() == MemorySnapshot(7, "after the crash")


def test_two_writers_choosing_the_same_version_resolve_to_the_later_zone() -> None:
    tape = new_tape()
    zone(tape, 2, long_term("kernel A"))
    zone(tape, 2, long_term("kernel B"))
    assert tape.memory.read().long_term == "kernel B"


def test_zones_written_by_handoff_with_audit_events_still_read() -> None:
    tape = new_tape()
    # As Bub's handoff writes them, each anchor followed by its `handoff` audit event (Tape.handoff refuses memory/).
    note = TapeEntry.event("memory.long_term", {"content": "from Bub"})
    for name, between in (("memory/open", [note]), ("memory/seal", [])):
        state = {"version": 1}
        audit = TapeEntry.event("handoff", {"name": name, "state": state})
        tape.extend([TapeEntry.anchor(name, state), audit, *between])
    assert tape.memory.read() == MemorySnapshot(1, "from Bub")


def test_clear_supersedes_everything_without_deleting_it() -> None:
    tape = new_tape()
    tape.memory.save_long_term("secret plan")
    cleared = tape.memory.clear()
    assert cleared == MemorySnapshot(2)
    assert tape.memory.read() == MemorySnapshot(2)
    assert any(e.payload.get("data", {}).get("content") == "secret plan" for e in tape.read(kinds=("event",)))


def test_prune_drops_notes_past_retention_and_counts_them() -> None:
    tape = new_tape()
    memory = MemoryZone(tape, retention_days=30)
    for day in ("2026-01-01", "2026-01-10", "2026-01-11", "2026-02-09"):
        memory.append_daily("note", date=day)
    assert memory.prune(today="2026-02-10") == 2
    assert [note.date for note in memory.read().dailies] == ["2026-02-09", "2026-01-11"]
    last_id = tape.last_id
    assert memory.prune(today="2026-02-10") == 0
    assert tape.last_id == last_id


def test_history_lists_every_sealed_version() -> None:
    tape = seed_5_3()
    tape.append(TapeEntry.anchor("memory/open", {"version": 4}))
    rows = tape.memory.history()
    assert [(r.version, r.current) for r in rows] == [(1, False), (2, False), (3, True)]
    first, _, last = rows
    assert first.entry_ids == (first.open_id, first.seal_id) == (2, 3)
    assert (last.long_term_chars, last.daily_count) == (len("User likes Python"), 2)
    assert last.entry_ids == tuple(range(last.open_id, last.seal_id + 1))
    assert last.date == tape.get(last.seal_id).date


def test_reading_memory_reads_back_only_to_the_current_zone_and_reads_that_zone_alone() -> None:
    store = CountingStore()
    tape = new_tape(store)
    tape.memory.save_long_term("old")
    tape.extend([TapeEntry.message({"role": "user", "content": f"m{i}"}) for i in range(3000)])
    tape.memory.save_long_term("new")
    tape.extend([TapeEntry.message({"role": "user", "content": f"n{i}"}) for i in range(3000)])
    store.reads.clear()
    store.reversed_entries = 0
    assert tape.memory.read().long_term == "new"
    touched = sum((stop or tape.last_id + 1) - start for start, stop in store.reads)
    assert touched < 10
    assert store.reversed_entries == 3000 + 3, "back to the current zone's open, and no further"


def test_memory_survives_reopening_a_file_tape(tmp_path: Path) -> None:
    first = open_tape("notes", home=tmp_path)
    first.memory.save_long_term("User prefers dark mode")
    first.memory.append_daily("- set up the notebook", date="2026-02-10")
    again = open_tape("notes", home=tmp_path)
    assert again.memory.read() == first.memory.read()
    assert again.memory.read().version == 2


def test_tape_memory_is_a_memory_zone() -> None:
    tape = new_tape()
    assert isinstance(tape.memory, bub_nb.memory.MemoryZone)
    assert "retention_days=30" in repr(tape.memory)


@pytest.mark.parametrize("bad", ["10/02/2026", "2026-13-01", "yesterday"])
def test_bad_dates_are_refused_naming_them(bad: Any) -> None:
    tape = new_tape()
    with pytest.raises(MemoryZoneError, match=re.escape(repr(bad))):
        tape.memory.append_daily("note", date=bad)
    assert tape.last_id == 0
