"""An Agents SDK SQLiteSession, written by the SDK's own Runner, becomes a tape."""

from __future__ import annotations

from pathlib import Path

from bub_nb import import_log, open_tape


def test_a_session_maps_every_item_in_order_under_an_anchor_per_session(agents_session: Path, home: Path) -> None:
    report = import_log(agents_session, home=home)

    assert report.format == "agents-sdk"
    assert (report.records, report.mapped, report.kept) == (7, 7, 0)  # 1 session, 6 items
    assert report.kinds == {"event": 1, "anchor": 1, "message": 4, "tool_call": 1, "tool_result": 1}
    tape = open_tape(report.tape, home=home)
    assert [(a.name, a.state) for a in tape.anchors()] == [("session", {"session": "adder-1"})]
    messages = [(m["role"], m.get("content")) for m in tape.view().messages]
    assert messages[1:] == [
        ("user", "What is 2 + 3?"),
        ("assistant", ""),
        ("tool", "5"),
        ("assistant", "2 + 3 is 5."),
        ("user", "Say hello"),
        ("assistant", "Hello again."),
    ]
    call = tape.read(kinds=["tool_call"])[0]
    assert call.payload["calls"][0]["function"] == {"name": "add", "arguments": '{"a": 2, "b": 3}'}
    assert call.meta["model"] == "bub-nb-test"


def test_a_time_without_offset_is_written_in_utc_and_kept_as_the_log_gave_it(agents_session: Path, home: Path) -> None:
    """SQLite's CURRENT_TIMESTAMP has no offset (it is UTC): the date says so, ``meta.source_date`` keeps the text."""
    report = import_log(agents_session, home=home)

    first = open_tape(report.tape, home=home).read(kinds=["message"])[0]
    original = first.meta["source_date"]
    assert len(original) == 19 and original[10] == " "  # "YYYY-MM-DD HH:MM:SS", as SQLite writes it
    assert first.date == original.replace(" ", "T") + "+00:00"
