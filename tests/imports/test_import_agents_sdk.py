"""An Agents SDK SQLiteSession, written by the SDK's own Runner, becomes a tape."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

from harness.logs import write_agents_session

from bub_nb import import_log, open_tape
from bub_nb.testing import OpenAICompatibleServer


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


def test_an_advanced_session_s_turn_usage_closes_each_turn_with_its_cached_and_reasoning_tokens(
    tmp_path: Path, openai_server: OpenAICompatibleServer, home: Path
) -> None:
    path = write_agents_session(tmp_path / "advanced.db", openai_server, advanced=True)
    with closing(sqlite3.connect(path)) as db:  # the SDK's own account, read without bub_nb
        stored = db.execute(
            "SELECT input_tokens, output_tokens, input_tokens_details, output_tokens_details "
            "FROM turn_usage ORDER BY id"
        ).fetchall()
    expected = [
        (given, spent, json.loads(cached)["cached_tokens"], json.loads(reasoning)["reasoning_tokens"])
        for given, spent, cached, reasoning in stored
    ]

    report = import_log(path, home=home)
    tape = open_tape(report.tape, home=home)
    runs = tape.to_frame().tape.runs()

    assert report.accounted and report.kinds["event"] >= 3  # the source, and a run per turn
    found = runs[["input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens"]].fillna(0).astype(int)
    assert [tuple(row) for row in found.itertuples(index=False)] == expected
    assert expected == [(50 + 70, 7 + 6, 36, 0), (90, 3, 64, 2)]
    assert runs["prompt"].tolist() == ["What is 2 + 3?", "Say hello"]  # each run closes its own turn
    assert runs["answer"].tolist() == ["2 + 3 is 5.", "Hello again."]


def test_sessions_begun_in_the_same_second_come_in_the_order_they_were_written(
    tmp_path: Path, openai_server: OpenAICompatibleServer, home: Path
) -> None:
    path = tmp_path / "two.db"
    for session in ("zeta", "alpha"):  # written in this order; their names sort the other way
        write_agents_session(path, openai_server, session)
    with closing(sqlite3.connect(path)) as db, db:
        # one second for both, as when they begin together (and whether or not the machine was that quick)
        db.execute("UPDATE agent_sessions SET created_at = (SELECT MIN(created_at) FROM agent_sessions)")

    tape = open_tape(import_log(path, home=home).tape, home=home)

    assert [a.state["session"] for a in tape.anchors() if a.state] == ["zeta", "alpha"]
