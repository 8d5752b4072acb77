"""Logs the real Claude Code and Codex CLIs wrote, imported and compared with each tool's own account of itself.

Each CLI runs offline against the scripted endpoint (``harness.cli_endpoint``) through the sessions of
``harness.cli_sessions``: a plain answer, two parallel tool calls of which one fails, a long streamed reply, a
compaction and (Claude Code) a sub-agent. The
oracle is a plain ``json`` pass over the log the tool wrote, kept here and sharing nothing with
``bub_nb.imports``: for Claude Code the last usage snapshot of each reply (message id) and every ``tool_use`` id
with its ``tool_result``; for Codex the final ``total_token_usage`` and the total the CLI printed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from harness.cli_sessions import (
    SUMMARY,
    claude_reply,
    claude_session_runs,
    codex_delegating_reply,
    codex_delegating_run,
    codex_reply,
    codex_session_run,
)
from harness.clis import CliHome, cli_binary, cli_home

from bub_nb import import_log, open_tape, read_tapes
from bub_nb.export.spans import tape_spans
from bub_nb.tape import Tape


def claude_oracle(paths: list[Path]) -> dict[str, Any]:
    """The log's own account: the last usage of each reply, every call id and the call ids with a result."""
    usage: dict[str, dict[str, int]] = {}
    calls: dict[str, str] = {}
    results: dict[str, bool] = {}
    dates: list[str] = []
    records = 0
    for path in paths:
        for line in path.read_text().splitlines():
            record = json.loads(line)
            records += 1
            if isinstance(record.get("timestamp"), str):
                dates.append(record["timestamp"])
            message = record.get("message")
            content = message.get("content") if isinstance(message, dict) else None
            if record.get("type") == "assistant":
                usage[message["id"]] = message["usage"]  # the last record of a reply holds its final usage
            for block in content if isinstance(content, list) else ():
                if block.get("type") == "tool_use":
                    calls[block["id"]] = block["name"]
                elif block.get("type") == "tool_result":
                    results[block["tool_use_id"]] = block.get("is_error") is True
    return {
        "input": sum(
            u["input_tokens"] + u.get("cache_read_input_tokens", 0) + u.get("cache_creation_input_tokens", 0)
            for u in usage.values()
        ),
        "output": sum(u["output_tokens"] for u in usage.values()),
        "replies": len(usage),
        "calls": calls,
        "results": results,
        "last_date": max(dates),
        "records": records,
    }


@pytest.fixture(scope="module")
def claude_session(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    cli_binary("claude")
    with cli_home(tmp_path_factory.mktemp("claude"), claude_reply) as cli:
        return {"cli": cli, "printed": claude_session_runs(cli)}


def _import_all(cli: CliHome, home: Path) -> list[Tape]:
    tapes = []
    for path in [*cli.claude_logs(), *cli.claude_subagent_logs()]:
        report = import_log(path, home=home)
        assert report.mapped + report.kept == report.records
        tapes.append(open_tape(report.tape, home=home))
    return tapes


def test_claude_code_token_totals_match_the_last_snapshot_of_every_reply(
    claude_session: dict[str, Any], tmp_path: Path
) -> None:
    cli: CliHome = claude_session["cli"]
    oracle = claude_oracle([*cli.claude_logs(), *cli.claude_subagent_logs()])
    _import_all(cli, tmp_path)

    runs = read_tapes(tmp_path).tape.runs()
    assert (len(runs), runs["input_tokens"].sum(), runs["output_tokens"].sum()) == (
        oracle["replies"], oracle["input"], oracle["output"],
    )  # fmt: skip
    # Claude Code's own total for the first run (no compaction, no sub-agent) is what the log holds for it.
    printed = claude_session["printed"][0]["usage"]
    first = runs[runs["start"] == runs["start"].min()].iloc[0]
    assert (first["input_tokens"], first["output_tokens"]) == (
        printed["input_tokens"] + printed["cache_read_input_tokens"] + printed["cache_creation_input_tokens"],
        printed["output_tokens"],
    )
    # Its session totals (modelUsage, which adds up every run of the session so far) after the second run, the
    # last whose model calls are all in its logs (the sub-agent's too), are the tapes' totals.
    models = claude_session["printed"][1]["modelUsage"].values()
    session_in = sum(m["inputTokens"] + m["cacheReadInputTokens"] + m["cacheCreationInputTokens"] for m in models)
    assert (runs["input_tokens"].sum(), runs["output_tokens"].sum()) == (
        session_in, sum(m["outputTokens"] for m in models),
    )  # fmt: skip


def test_claude_code_every_call_keeps_its_result_and_its_span(claude_session: dict[str, Any], tmp_path: Path) -> None:
    cli: CliHome = claude_session["cli"]
    oracle = claude_oracle([*cli.claude_logs(), *cli.claude_subagent_logs()])
    tapes = _import_all(cli, tmp_path)

    frame = read_tapes(tmp_path)
    calls = frame.tape.tool_calls()
    assert dict(zip(calls["call_id"], calls["tool"], strict=True)) == oracle["calls"]
    failed = dict(zip(calls["call_id"], ~calls["ok"].astype(bool), strict=True))
    assert failed == oracle["results"]  # no call without its result, the failing command failed
    spans = [s for t in tapes for s in tape_spans(t.name, t.read()).spans]
    tools = [s for s in spans if s.name.startswith("execute_tool")]
    assert len(tools) == len(oracle["calls"])
    agents = [s for s in spans if s.name.startswith("invoke_agent")]
    chats = [s for s in spans if s.name.startswith("chat")]
    assert len(chats) == oracle["replies"] and {c.parent_id for c in chats} == {a.span_id for a in agents}


def test_claude_code_dates_are_the_logs_and_the_sub_agent_is_its_own_linked_tape(
    claude_session: dict[str, Any], tmp_path: Path
) -> None:
    cli: CliHome = claude_session["cli"]
    [main] = cli.claude_logs()
    [helper] = cli.claude_subagent_logs()
    report = import_log(main, home=tmp_path)
    assert report.last_date == claude_oracle([main])["last_date"]
    tape = open_tape(report.tape, home=tmp_path)
    assert all(e.date <= report.last_date for e in tape.read())
    assert [a.name for a in tape.anchors()][-1] == "compaction"

    sub = import_log(helper, home=tmp_path)  # its own tape, not refused as the parent's
    assert sub.tape != report.tape
    source = open_tape(sub.tape, home=tmp_path).read()[0].payload["data"]
    [task] = [i for i, n in claude_oracle([main])["calls"].items() if n == "Agent"]
    branch = source["branched_from"]
    assert branch.startswith(f"tape://{report.tape}/entry/")
    entry = tape.read()[int(branch.rsplit("/", 1)[1]) - 1]
    assert task in [c["id"] for c in entry.payload["calls"]]


# -- Codex ----------------------------------------------------------------------------------------------


def codex_oracle(path: Path) -> dict[str, Any]:
    final: dict[str, int] = {}
    calls: dict[str, str] = {}
    outputs: set[str] = set()
    history: list[dict[str, Any]] = []
    dates = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        dates.append(record["timestamp"])
        payload = record.get("payload") or {}
        if payload.get("type") == "token_count" and payload.get("info"):
            final = payload["info"]["total_token_usage"]
        elif payload.get("type") == "function_call":
            calls[payload["call_id"]] = payload["name"]
        elif payload.get("type") == "function_call_output":
            outputs.add(payload["call_id"])
        elif record.get("type") == "compacted":
            history = payload.get("replacement_history") or []
    return {"usage": final, "calls": calls, "outputs": outputs, "last_date": max(dates), "replacement_history": history}


@pytest.fixture(scope="module")
def codex_session(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    cli_binary("codex")
    with cli_home(tmp_path_factory.mktemp("codex"), codex_reply) as cli:
        return {"cli": cli, "printed": codex_session_run(cli)}


def test_codex_token_totals_are_its_final_total(codex_session: dict[str, Any], tmp_path: Path) -> None:
    cli: CliHome = codex_session["cli"]
    [log] = cli.codex_logs()
    oracle = codex_oracle(log)
    report = import_log(log, home=tmp_path)
    assert report.mapped + report.kept == report.records

    runs = open_tape(report.tape, home=tmp_path).to_frame().tape.runs()
    usage = oracle["usage"]
    assert (runs["input_tokens"].sum(), runs["output_tokens"].sum(), runs["cached_tokens"].sum()) == (
        usage["input_tokens"], usage["output_tokens"], usage["cached_input_tokens"],
    )  # fmt: skip
    # Codex prints "tokens used" as its total less the cached input.
    printed = re.search(r"tokens used\s*\n([\d,]+)", codex_session["printed"])
    assert printed is not None
    assert int(printed.group(1).replace(",", "")) == usage["total_tokens"] - usage["cached_input_tokens"]


def test_codex_calls_keep_their_results_spans_and_the_compacted_history(
    codex_session: dict[str, Any], tmp_path: Path
) -> None:
    cli: CliHome = codex_session["cli"]
    [log] = cli.codex_logs()
    oracle = codex_oracle(log)
    report = import_log(log, home=tmp_path)
    tape = open_tape(report.tape, home=tmp_path)

    calls = tape.to_frame().tape.tool_calls()
    assert dict(zip(calls["call_id"], calls["tool"], strict=True)) == oracle["calls"]
    assert set(calls["call_id"][calls["error_kind"] != "missing_result"]) == oracle["outputs"]
    spans = tape_spans(tape.name, tape.read()).spans
    assert len([s for s in spans if s.name.startswith("execute_tool")]) == len(oracle["calls"])
    agents = {s.span_id for s in spans if s.name.startswith("invoke_agent")}
    assert agents == {s.parent_id for s in spans if s.name.startswith("chat")}
    [anchor] = [a for a in tape.anchors() if a.name == "compaction"]
    assert SUMMARY in anchor.state["summary"]
    # What the model reads after the compaction is the history that replaced the conversation, on the tape.
    history = oracle["replacement_history"]
    after = [e for e in tape.read() if e.id > anchor.id and e.meta.get("compacted")]
    assert len(after) == len(history) and [e.payload.get("role") for e in after] == [i.get("role") for i in history]
    texts = [c["text"] for item in history for c in item.get("content") or () if "text" in c]
    seen = json.dumps([m["content"] for m in tape.view(anchor.name).messages])
    assert texts and all(json.dumps(text)[1:-1] in seen for text in texts)
    assert report.last_date == oracle["last_date"]


def test_a_codex_sub_agent_is_its_own_tape_linked_to_the_call_that_spawned_it(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    cli_binary("codex")
    with cli_home(tmp_path_factory.mktemp("codex-agents"), codex_delegating_reply) as cli:
        codex_delegating_run(cli)
        logs = cli.codex_logs()
    home = tmp_path_factory.mktemp("codex-agents-home")
    sessions = {json.loads(log.read_text().splitlines()[0])["payload"].get("parent_thread_id"): log for log in logs}
    parent, child = sessions[None], next(log for key, log in sessions.items() if key is not None)
    spawned = next(c for c, name in codex_oracle(parent)["calls"].items() if name == "spawn_agent")

    reports = {log: import_log(log, home=home) for log in (child, parent)}  # the child first: no order needed
    for log, report in reports.items():
        usage = codex_oracle(log)["usage"]
        runs = open_tape(report.tape, home=home).to_frame().tape.runs()
        assert (runs["input_tokens"].sum(), runs["output_tokens"].sum()) == (
            usage["input_tokens"], usage["output_tokens"],
        )  # fmt: skip
    branch = open_tape(reports[child].tape, home=home).read()[0].payload["data"]["branched_from"]
    entry = open_tape(reports[parent].tape, home=home).resolve(branch)
    assert [c["id"] for c in entry.payload["calls"]] == [spawned]
