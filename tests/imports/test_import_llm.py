"""llm's logs.db, written by llm's own code, becomes a tape: its threads, messages, tools and turns."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

from harness.logs import DATA

from bub_nb import import_log, open_tape


def test_a_logs_db_maps_threads_messages_and_turns_and_keeps_the_rest(llm_logs: Path, home: Path) -> None:
    report = import_log(llm_logs, home=home)

    assert report.format == "llm"
    # 1 thread, 7 messages, 3 turns, 1 tool definition; the 3 rows tying turns to tools are kept whole.
    assert (report.records, report.mapped, report.kept) == (15, 12, 3)
    assert report.kept_types == {"turn_tools": 3}
    tape = open_tape(report.tape, home=home)
    [anchor] = tape.anchors()
    assert anchor.name == "conversation" and anchor.state is not None and anchor.state["name"] == "What is 2 + 3?"
    call = tape.read(kinds=["tool_call"])[0].payload["calls"][0]
    assert call["function"] == {"name": "add", "arguments": '{"a":2,"b":3}'}
    assert tape.read(kinds=["tool_result"])[0].payload["results"] == ["5"]
    assert tape.read(kinds=["system"])[0].payload["content"] == "Answer briefly."
    contents = [m["content"] for m in tape.view().messages if m["role"] != "tool"]
    assert contents[-3:] == ["2 + 3 is 5.", "Say hello", "Hello again."]


def test_each_turn_closes_with_a_run_event_holding_its_usage_model_and_duration(llm_logs: Path, home: Path) -> None:
    report = import_log(llm_logs, home=home)
    frame = open_tape(report.tape, home=home).to_frame()

    runs = frame[frame["name"] == "run"]
    assert runs["prompt_tokens"].tolist() == [50, 70, 90]
    assert runs["completion_tokens"].tolist() == [7, 6, 3]
    data = [payload["data"] for payload in runs["payload"]]
    assert {d["model"] for d in data} == {"bub-nb-test"}
    assert all(isinstance(d["elapsed_ms"], int) for d in data)
    assert runs["run_id"].notna().all()


def test_a_logs_db_from_before_threads_reads_its_responses_and_tool_rows(home: Path) -> None:
    """llm before 0.30 logged one ``responses`` row per call, with ``tool_calls`` and ``tool_results`` rows."""
    report = import_log(DATA / "llm" / "logs-0.29.db", home=home)

    # 1 conversation, 3 responses, 1 call, 1 result, 1 tool; the 3 rows tying responses to tools are kept.
    assert (report.format, report.records, report.mapped, report.kept) == ("llm", 10, 7, 3)
    assert report.kept_types == {"tool_responses": 3}
    tape = open_tape(report.tape, home=home)
    assert [(m["role"], m["content"]) for m in tape.view().messages][1:] == [
        ("user", "What is 2 + 3?"),
        ("assistant", ""),
        ("tool", "5"),
        ("assistant", "2 + 3 is 5."),
        ("user", "Say hello"),
        ("assistant", "Hello again."),
    ]
    runs = tape.to_frame().query("name == 'run'")
    assert runs["prompt_tokens"].tolist() == [50, 70, 90]
    assert runs.iloc[0]["date"].isoformat() == "2026-11-26T10:14:53.394133+00:00"


def test_cached_and_reasoning_tokens_come_from_where_llm_keeps_them(llm_logs: Path, home: Path) -> None:
    """llm keeps what OpenAI's usage says beyond its two counts in ``token_details``, nested as OpenAI nests it."""
    with closing(sqlite3.connect(llm_logs)) as db:
        details = [json.loads(text) for (text,) in db.execute("SELECT token_details FROM turns ORDER BY id") if text]
    cached = [d["prompt_tokens_details"]["cached_tokens"] for d in details]
    reasoning = [d.get("completion_tokens_details", {}).get("reasoning_tokens", 0) for d in details]

    runs = open_tape(import_log(llm_logs, home=home).tape, home=home).to_frame().tape.runs()

    assert runs["cached_tokens"].dropna().tolist() == cached == [36, 64]
    assert runs["reasoning_tokens"].dropna().tolist() == [r for r in reasoning if r] == [2]
