"""Claude Code sessions become tapes: calls, results, sub-agents, usage and compaction, every record kept."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.logs import DATA

from bub_nb import import_log, open_tape
from bub_nb.imports.draft import SOURCE

SIDECHAIN = DATA / "claude-code" / "sidechain_integrated.jsonl"
COMPACTION = DATA / "claude-code" / "dag_compact_after_rewind.jsonl"


def test_a_session_with_a_sub_agent_maps_every_record_and_hides_the_sub_agent(home: Path) -> None:
    report = import_log(SIDECHAIN, home=home)

    assert (report.format, report.records, report.mapped, report.kept) == ("claude-code", 6, 6, 0)
    assert report.kinds == {"event": 4, "tool_call": 2, "tool_result": 3, "message": 1}  # a reply's text joins its call
    assert report.session["session"] == "88a8d761-7b9a-4bf1-a8ca-c1febe6bf358"
    tape = open_tape(report.tape, home=home)
    entries = tape.read()
    assert entries[0].name == SOURCE and entries[0].payload["data"]["version"] == "2.0.46"
    task = entries[1]
    assert task.payload["calls"][0]["function"]["name"] == "Task"
    assert task.payload["calls"][0]["id"] == "toolu_01JA2mLseQCAW3MdwPE4qWEk"
    assert task.date == "2025-11-19T22:53:34.908Z"  # the source's own time, kept
    sidechain = [e for e in entries if e.meta.get("sidechain")]
    assert {e.kind for e in sidechain} == {"tool_call", "tool_result"}  # the reply's text is its call's content
    assert sidechain[0].payload["content"] and sidechain[0].meta["records"] == [3, 4]
    assert all(e.meta["context"] is False for e in sidechain)
    view = tape.view(None)
    assert [(m["role"], bool(m.get("tool_calls"))) for m in view.messages] == [
        ("assistant", True), ("tool", False), ("assistant", False),
    ]  # fmt: skip
    assert view.messages[1]["content"].startswith("Perfect! Now I have a complete understanding")


def test_usage_counts_cache_reads_and_writes_once_per_model_reply(home: Path) -> None:
    report = import_log(SIDECHAIN, home=home)
    frame = open_tape(report.tape, home=home).to_frame()

    runs = frame[frame["name"] == "run"]
    # The sub-agent's reply spans two records with one usage: counted once, its run closing the reply where the
    # sub-agent moves on (its next record is the result of a later call; this excerpt lacks the reply's own).
    assert runs["prompt_tokens"].tolist() == [3 + 141272, 3 + 19830, 3 + 2952 + 141272]
    assert runs["completion_tokens"].tolist() == [365, 183, 190]
    last = runs.iloc[2]["payload"]["data"]
    assert last["model"] == "claude-sonnet-4-5-20250929"
    assert last["usage"]["prompt_tokens_details"] == {"cached_tokens": 141272}
    assert last["source_usage"]["cache_creation_input_tokens"] == 2952
    budget = frame.tape.usage(by="model")  # the usage helpers read imported runs as they read bub_nb's own
    assert budget.loc["claude-sonnet-4-5-20250929", ["turns", "tokens_in", "tokens_out"]].tolist() == [
        3, 3 + 141272 + 3 + 19830 + 3 + 2952 + 141272, 365 + 183 + 190,
    ]  # fmt: skip


def test_a_result_whose_call_is_missing_and_a_call_without_result_are_both_kept(home: Path) -> None:
    report = import_log(SIDECHAIN, home=home)
    results = [e for e in open_tape(report.tape, home=home).read() if e.kind == "tool_result"]

    orphan = next(e for e in results if e.meta.get("call_ids") == ["toolu_011V1hetiJ3pC79EoLTY53Ni"])
    assert orphan.payload["results"][0].startswith("  3130")
    closed = next(e for e in results if e.meta.get("run_id") == "req_011CVJ51ytkcBEjrQhRNswqR")
    unanswered = closed.payload["results"][0]
    assert unanswered["kind"] == "missing_result" and "toolu_01BWgwmyj8gGuqFNHMPqqtN2" in unanswered["message"]
    assert closed.id < orphan.id  # the sub-agent's result for a later call closes the reply that went unanswered


def test_a_compaction_becomes_the_anchor_the_next_view_starts_at(home: Path) -> None:
    report = import_log(COMPACTION, home=home)

    assert (report.records, report.mapped, report.kept) == (12, 12, 0)
    tape = open_tape(report.tape, home=home)
    [anchor] = tape.anchors()
    assert anchor.name == "compaction"
    assert anchor.state == {"trigger": "auto", "pre_tokens": 150000, "from": "claude-code"}
    assert anchor.date == "2025-07-01T10:30:00.000Z"
    contents = [m["content"] for m in tape.view().messages]
    assert contents[0].startswith("[Anchor created: compaction]")
    assert contents[1].startswith("This session is being continued from a previous conversation")
    assert contents[2:] == ["After compaction", "Final answer"]
    summary = tape.read(kinds=["message"])[-3]
    assert summary.meta["compact_summary"] is True


def test_content_blocks_the_reading_does_not_know_stay_on_the_tape(tmp_path: Path, home: Path) -> None:
    """A server-side tool's blocks beside a reply ride on its entry; a record of nothing but such blocks is kept."""
    search = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "bub"}}
    found = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}
    records = [
        {"type": "assistant", "sessionId": "s", "timestamp": "2025-11-19T22:53:34.908Z",
         "message": {"id": "m1", "role": "assistant", "content": [search, found, {"type": "text", "text": "Found."}]}},
        {"type": "user", "sessionId": "s", "timestamp": "2025-11-19T22:53:35.000Z",
         "message": {"role": "user", "content": [{"type": "document", "source": {}}]}},
    ]  # fmt: skip
    path = tmp_path / "session.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records))

    report = import_log(path, home=home)

    assert (report.records, report.mapped, report.kept) == (2, 1, 1)
    assert report.kept_types == {"user": 1}
    reply = open_tape(report.tape, home=home).read(kinds=["message"])[0]
    assert reply.payload == {"role": "assistant", "content": "Found."}
    assert reply.meta["blocks"] == [search, found]


def test_a_sub_agents_own_file_is_its_conversation_not_hidden(tmp_path: Path, home: Path) -> None:
    lines = SIDECHAIN.read_text(encoding="utf-8").splitlines()
    path = tmp_path / "agent-e1c84ba5.jsonl"
    path.write_text("\n".join(line for line in lines if '"isSidechain": true' in line) + "\n", encoding="utf-8")

    tape = open_tape(import_log(path, home=home).tape, home=home)

    entries = [e for e in tape.read() if e.kind in ("message", "tool_call", "tool_result")]
    assert entries and all(e.meta["sidechain"] is True and "context" not in e.meta for e in entries)
    assert [m["role"] for m in tape.view(None).messages] == ["assistant", "tool"]


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


def test_a_replys_usage_is_its_last_records_as_output_tokens_grow_while_it_streams(tmp_path: Path, home: Path) -> None:
    records = _records(SIDECHAIN)
    # Claude Code writes a record per block while the reply streams: the first holds the count at that time.
    records[2]["message"]["usage"] = {**records[2]["message"]["usage"], "output_tokens": 10}
    report = import_log(_write(tmp_path / "session.jsonl", records), home=home)

    runs = open_tape(report.tape, home=home).to_frame().tape.runs()
    assert sorted(runs["output_tokens"]) == [183, 190, 365]  # the sub-agent's reply ends at 183, not 10


def test_progress_records_between_the_calls_of_one_reply_leave_them_one_call_entry(tmp_path: Path, home: Path) -> None:
    first, _, _, _, _, last = _records(SIDECHAIN)
    reply = first["message"]
    call = lambda n: {"type": "tool_use", "id": f"toolu_{n}", "name": "Bash", "input": {"command": f"echo {n}"}}  # noqa: E731
    answer = lambda n: {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": str(n)}  # noqa: E731
    result = lambda n: {  # noqa: E731
        **last, "type": "user", "uuid": f"r{n}", "message": {"role": "user", "content": [answer(n)]},
    }  # fmt: skip
    progress = {"type": "progress", "data": {"type": "hook_progress", "hookEvent": "PreToolUse"}, "sessionId": "s"}
    block = lambda n: {**first, "uuid": f"a{n}", "message": {**reply, "content": [call(n)]}}  # noqa: E731
    records = [block(1), progress, result(1), progress, block(2), result(2), last]
    report = import_log(_write(tmp_path / "session.jsonl", records), home=home)

    tape = open_tape(report.tape, home=home)
    [calls] = tape.read(kinds=["tool_call"])
    assert [c["id"] for c in calls.payload["calls"]] == ["toolu_1", "toolu_2"]
    [results] = tape.read(kinds=["tool_result"])
    assert results.payload["results"] == ["1", "2"]  # no missing result, no orphan
    assert report.mapped + report.kept == report.records == 7


def test_a_record_without_a_date_takes_its_neighbours_never_the_import_time(tmp_path: Path, home: Path) -> None:
    records = _records(COMPACTION)
    snapshot = {"type": "file-history-snapshot", "messageId": "m1", "snapshot": {"trackedFileBackups": {}}}
    report = import_log(_write(tmp_path / "session.jsonl", [snapshot, *records]), home=home)

    entries = open_tape(report.tape, home=home).read()
    dated = sorted(r["timestamp"] for r in records if "timestamp" in r)
    assert entries[0].date == entries[1].date == dated[0]  # the heading and the kept snapshot
    assert report.last_date == dated[-1]


def test_a_sub_agents_file_gets_its_own_tape_name(tmp_path: Path, home: Path) -> None:
    lines = [r for r in _records(SIDECHAIN) if r.get("isSidechain")]
    for record in lines:
        record["agentId"] = "e1c84ba5"
    folder = tmp_path / "88a8d761-7b9a-4bf1-a8ca-c1febe6bf358" / "subagents"
    folder.mkdir(parents=True)
    parent = import_log(SIDECHAIN, home=home)

    report = import_log(_write(folder / "agent-e1c84ba5.jsonl", lines), home=home)

    assert report.tape == f"{parent.tape}__agent-e1c84ba5"
    assert "branched_from" not in open_tape(report.tape, home=home).read()[0].payload["data"]  # no parent log here
