"""Tapes exported to a real Phoenix on 127.0.0.1 over OTLP/HTTP, read back with Phoenix's own client.

Each tape is one Phoenix session (``gen_ai.conversation.id``), each turn one trace, and the session's token
counts are the sums of the tape's ``run`` events. Phoenix starts once for the module (about 20 s here).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from harness.phoenix_server import PhoenixReceiver
from harness.shell import loaded_shell

import bub_nb
from bub_nb import export
from bub_nb.agent import Agent, BuiltinPlugin, Envelope, OpenAIModel, TurnPipeline, default_pipeline
from bub_nb.agent.live_export import PLUGIN_NAME, LiveExport, register_from_environment
from bub_nb.cli import main
from bub_nb.tape import Tape
from bub_nb.tape.events import run_usage
from bub_nb.testing.server import OpenAICompatibleServer

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PhoenixReceiver]:
    with PhoenixReceiver(tmp_path_factory.mktemp("phoenix")) as receiver:
        yield receiver


def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


def usage(prompt: int, completion: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def sessions(phoenix: PhoenixReceiver) -> dict[str, dict[str, Any]]:
    return {session["session_id"]: session for session in phoenix.client().sessions.list(project_name="default")}


def session_of(phoenix: PhoenixReceiver, tape: str, traces: int, timeout: float = 60.0) -> dict[str, Any]:
    """The Phoenix session of ``tape`` once it holds ``traces`` traces (Phoenix inserts spans in the background)."""
    deadline = time.monotonic() + timeout
    while True:
        found = sessions(phoenix).get(tape)
        if (found is not None and len(found["traces"]) >= traces) or time.monotonic() > deadline:
            assert found is not None, f"Phoenix has no session {tape!r}: {sorted(sessions(phoenix))}"
            return found
        time.sleep(0.5)


def spans_of(phoenix: PhoenixReceiver, tape: str) -> pd.DataFrame:
    frame = phoenix.client().spans.get_spans_dataframe(project_identifier="default", limit=100_000)
    return frame[frame["attributes.session.id"] == tape]


def flat(attributes: Any, prefix: str = "gen_ai") -> dict[str, Any]:
    """Phoenix's nested attributes as the dotted names they were sent with."""
    if not isinstance(attributes, dict):
        return {prefix: attributes}
    return {k: v for key, value in attributes.items() for k, v in flat(value, f"{prefix}.{key}").items()}


def run_totals(tape: Tape) -> tuple[int, int]:
    runs = [u for u in (run_usage(entry) for entry in tape.read()) if u is not None]
    return sum(u["prompt_tokens"] for u in runs), sum(u["completion_tokens"] for u in runs)


def test_each_tape_reads_back_as_one_session_with_its_run_events_token_counts(
    phoenix: PhoenixReceiver, openai_server: OpenAICompatibleServer, model: OpenAIModel, tmp_path: Path
) -> None:
    tools_tape = bub_nb.open_tape("phoenix-tools", home=tmp_path)
    openai_server.reply_tool_calls([{"name": "add", "arguments": {"a": 2, "b": 3}}], usage=usage(50, 7))
    openai_server.reply("5", usage=usage(60, 2))
    agent = Agent(tools_tape, model=model, tools=[add])
    agent.run("What is 2 + 3?")
    openai_server.reply('{"summary": "what is 2 + 3 [#6]", "next_steps": "none"}', usage=usage(30, 9))
    agent.handoff("phase/two", summarize=True)
    openai_server.reply("Nothing left to do.", usage=usage(20, 4))
    Agent(tools_tape, model=model).run("Anything else?")
    plain_tape = bub_nb.open_tape("phoenix-plain", home=tmp_path)
    openai_server.reply("Hello.", usage=usage(11, 3))
    Agent(plain_tape, model=model).run("Hi")

    first = export.otel(tools_tape, phoenix.base_url)
    again = export.otel(tools_tape, phoenix.base_url)  # the same ids: Phoenix keeps one copy
    plain = export.otel(plain_tape, phoenix.base_url)

    assert (first.turns, first.spans, first.pending) == (2, 6, 0)
    assert again.trace_ids == first.trace_ids
    tools_session = session_of(phoenix, "phoenix-tools", traces=2)
    plain_session = session_of(phoenix, "phoenix-plain", traces=1)
    assert sorted(t["trace_id"] for t in tools_session["traces"]) == sorted(first.trace_ids)
    assert [t["trace_id"] for t in plain_session["traces"]] == list(plain.trace_ids)
    for session, tape in ((tools_session, tools_tape), (plain_session, plain_tape)):
        prompt, completion = run_totals(tape)
        assert (session["token_count_prompt"], session["token_count_completion"]) == (prompt, completion)
    assert run_totals(tools_tape) == (130, 13)  # the summary's 30 + 9 is its own, under bub.summary

    spans = spans_of(phoenix, "phoenix-tools")
    assert len(spans) == 6, "a second export of the same tape adds no spans"
    assert sorted(spans["name"]) == [
        "chat test-model",
        "chat test-model",
        "chat test-model",
        "execute_tool add",
        "invoke_agent bub",
        "invoke_agent bub",
    ]
    genai = {span_id: flat(attributes) for span_id, attributes in spans["attributes.gen_ai"].items()}
    roots = spans[spans["parent_id"].isna()]
    assert set(spans["parent_id"].dropna()) <= set(roots.index)
    tool = spans[spans["name"] == "execute_tool add"].iloc[0]
    assert genai[tool.name]["gen_ai.tool.name"] == "add" and genai[tool.name]["gen_ai.tool.call.id"] == "call_1"
    assert "gen_ai.tool.call.arguments" not in genai[tool.name], "content stays out unless asked for"
    compacted = [g.get("gen_ai.conversation.compacted") for g in genai.values() if g["gen_ai.operation.name"] == "chat"]
    assert compacted.count(True) == 1, "only the call after the summarizing handoff saw a compacted view"
    events = [event["name"] for row in roots["events"] for event in row]
    assert {"bub.anchor", "bub.handoff", "bub.summary"} <= set(events)


def test_the_command_line_exports_tapes_by_name(
    phoenix: PhoenixReceiver, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tape = bub_nb.open_tape("phoenix-cli", home=tmp_path)
    Agent(tape, model="offline").run("One")
    Agent(tape, model="offline").run("Two")

    assert main(["tapes", "export", "--otlp", phoenix.base_url, "--home", str(tmp_path), "phoenix-cli"]) == 0
    assert "Exported 2 turns of tape 'phoenix-cli' as 4 spans" in capsys.readouterr().out
    assert len(session_of(phoenix, "phoenix-cli", traces=2)["traces"]) == 2

    assert main(["tapes", "export", "--otlp", phoenix.base_url, "--home", str(tmp_path), "phoenix-typo"]) == 2
    assert "phoenix-typo" in capsys.readouterr().err


def test_live_export_sends_each_turn_as_it_ends(
    phoenix: PhoenixReceiver, model: OpenAIModel, openai_server: OpenAICompatibleServer, tmp_path: Path
) -> None:
    pipeline = TurnPipeline(BuiltinPlugin, entry_points=False)
    live = LiveExport(phoenix.base_url)
    pipeline.register_plugin(live, name=PLUGIN_NAME)
    tape = bub_nb.open_tape("phoenix-live", home=tmp_path)
    agent = Agent(tape, model=model, pipeline=pipeline)
    for prompt, tokens in (("First", usage(40, 5)), ("Second", usage(45, 6))):
        openai_server.reply(f"{prompt} answer", usage=tokens)
        pipeline.process_inbound_sync(Envelope("notebook", "live.ipynb", prompt, meta={"tape": tape, "agent": agent}))
    assert live.flush(timeout=60)
    assert live.failures == [] and [r.turns for r in live.exported] == [1, 1]
    session = session_of(phoenix, "phoenix-live", traces=2)
    assert (session["token_count_prompt"], session["token_count_completion"]) == (85, 11) == run_totals(tape)


def test_the_standard_variable_and_the_magics_trait_switch_live_export_on(
    phoenix: PhoenixReceiver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", phoenix.base_url)
    pipeline = TurnPipeline(BuiltinPlugin, entry_points=False)
    register_from_environment(pipeline)
    assert PLUGIN_NAME in pipeline.plugin_names
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT")

    monkeypatch.setenv("BUB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("BUB_TAPE", "phoenix-magics")
    monkeypatch.chdir(tmp_path)
    with loaded_shell() as nb:
        nb.run(f'%config BubMagics.otlp_endpoint = "{phoenix.base_url}"')
        try:
            nb.run("%%bub\nHello from a cell")
            live = default_pipeline().get_plugin(PLUGIN_NAME)
            assert isinstance(live, LiveExport) and live.flush(timeout=60) and live.failures == []
            assert len(session_of(phoenix, "phoenix-magics", traces=1)["traces"]) == 1
        finally:
            nb.run('%config BubMagics.otlp_endpoint = ""')
    assert PLUGIN_NAME not in default_pipeline().plugin_names
