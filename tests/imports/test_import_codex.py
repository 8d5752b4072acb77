"""Codex CLI rollouts become tapes: the model's items, its settings and usage, and unknown records kept whole."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.logs import DATA

from bub_nb import import_log, open_tape
from bub_nb.imports.draft import UNMAPPED

REAL = DATA / "codex" / "sample_codex_session.jsonl"
TOOLS = DATA / "codex" / "rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl"


def test_a_real_rollout_keeps_what_the_model_was_sent_and_the_interface_records_beside_it(home: Path) -> None:
    report = import_log(REAL, home=home)

    assert (report.format, report.records, report.mapped, report.kept) == ("codex", 11, 11, 0)
    assert report.kinds == {"event": 9, "message": 3}
    assert report.session == {
        "session": "019b64e5-57fa-7463-b644-fba7e456f905",
        "version": "0.77.0",
        "cwd": "/Users/macmini/Code/homelab-migration",
    }
    tape = open_tape(report.tape, home=home)
    messages = tape.read(kinds=["message"])
    assert [m.payload["role"] for m in messages] == ["user", "user", "user"]
    assert (
        messages[0].payload["content"].startswith("# AGENTS.md instructions for /Users/macmini/Code/homelab-migration")
    )
    assert messages[2].payload["content"].startswith("can you analyse the MD files")
    assert messages[2].date == "2025-12-28T12:21:44.491Z"
    names = [e.name for e in tape.read(kinds=["event"])]
    assert names.count("import.turn_context") == 6 and "import.user_message" in names
    assert tape.view(None).messages[-1]["content"].startswith("can you analyse")


def test_calls_custom_tools_reasoning_and_a_record_from_the_future(home: Path) -> None:
    report = import_log(TOOLS, home=home)

    assert (report.records, report.mapped, report.kept) == (14, 13, 1)
    assert report.kept_types == {"future_synthetic_record": 1}
    tape = open_tape(report.tape, home=home)
    calls = [e.payload["calls"][0]["function"] for e in tape.read(kinds=["tool_call"])]
    assert [c["name"] for c in calls] == ["exec_command", "apply_patch", "mcp__synthetic__lookup"]
    assert calls[1]["arguments"].startswith("*** Begin Patch")  # a custom tool's free-form input, as it was
    results = [e.payload["results"] for e in tape.read(kinds=["tool_result"])]
    assert results == [["./alpha.txt\n./beta.txt"], ["Done!"], ['{"status":"ok"}']]
    reasoning = next(e for e in tape.read(kinds=["event"]) if e.name == "import.reasoning")
    assert reasoning.payload["data"] == {"summary": ["I will inspect the synthetic directory."]}
    kept = tape.read(kinds=["event"])[-1]
    assert kept.name == UNMAPPED
    assert kept.payload["data"]["raw"] == {
        "timestamp": "2026-01-02T03:04:16.000Z", "type": "future_synthetic_record", "payload": {"safe": "ignored"},
    }  # fmt: skip
    assert kept.payload["data"]["record"] == 14
    roles = [(m["role"], bool(m.get("tool_calls"))) for m in tape.view(None).messages]
    assert roles == [("user", False), *[("assistant", True), ("tool", False)] * 3, ("assistant", False)]


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


def _token_count(at: str, total: int, last: int) -> dict[str, Any]:
    usage = lambda n: {"input_tokens": n, "cached_input_tokens": 0, "output_tokens": 1, "total_tokens": n + 1}  # noqa: E731
    info = {"total_token_usage": usage(total), "last_token_usage": usage(last)}
    return {"timestamp": at, "type": "event_msg", "payload": {"type": "token_count", "info": info}}


def test_a_repeated_token_count_is_not_a_second_model_call(tmp_path: Path, home: Path) -> None:
    records = _lines(TOOLS)
    # Codex writes token_count again with the same total (a rate-limit update): the model was called twice.
    counts = [
        _token_count("2026-01-02T03:04:09.500Z", 100, 100),
        _token_count("2026-01-02T03:04:09.600Z", 100, 100),
        _token_count("2026-01-02T03:04:12.500Z", 250, 150),
    ]
    log = _write(tmp_path / "rollout.jsonl", [*records[:6], *counts[:2], *records[6:9], counts[2], *records[9:]])
    report = import_log(log, home=home)

    runs = open_tape(report.tape, home=home).to_frame().tape.runs()
    assert report.mapped + report.kept == report.records == len(records) + 3
    assert (len(runs), runs["input_tokens"].sum()) == (2, 250)  # Codex's own final total


def test_an_instruction_between_a_call_and_its_output_does_not_break_the_pair(tmp_path: Path, home: Path) -> None:
    records = _lines(TOOLS)
    developer = {
        "timestamp": "2026-01-02T03:04:09.500Z", "type": "response_item",
        "payload": {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Be brief."}]},
    }  # fmt: skip
    report = import_log(_write(tmp_path / "rollout.jsonl", [*records[:6], developer, *records[6:]]), home=home)

    tape = open_tape(report.tape, home=home)
    calls = tape.to_frame().tape.tool_calls()
    assert calls["ok"].tolist() == [True, True, True] and calls["result"][0] == "./alpha.txt\n./beta.txt"
    kinds = [(e.kind, e.payload.get("role")) for e in tape.read() if e.kind in ("tool_call", "tool_result", "message")]
    assert kinds[1:4] == [("tool_call", None), ("tool_result", None), ("message", "developer")]


def test_a_compaction_keeps_the_history_that_replaced_the_conversation(tmp_path: Path, home: Path) -> None:
    records = _lines(TOOLS)
    only_there = "Instructions the model reads after the compaction, and nowhere before it."
    history = [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": only_there}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "List the synthetic files."}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Summary: two files listed."}]},
    ]
    compacted = {
        "timestamp": "2026-01-02T03:04:15.500Z", "type": "compacted",
        "payload": {"message": "", "replacement_history": history},
    }  # fmt: skip
    report = import_log(_write(tmp_path / "rollout.jsonl", [*records[:-1], compacted, records[-1]]), home=home)

    tape = open_tape(report.tape, home=home)
    [anchor] = tape.anchors()
    assert anchor.state == {"summary": "Summary: two files listed.", "from": "codex", "replacement_history": 3}
    view = [m["content"] for m in tape.view().messages]
    assert view[1:] == [only_there, "List the synthetic files.", "Summary: two files listed."]
    assert report.mapped + report.kept == report.records
