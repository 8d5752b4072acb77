"""Codex CLI rollouts become tapes: the model's items, its settings and usage, and unknown records kept whole."""

from __future__ import annotations

from pathlib import Path

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
