"""Tools from MCP servers, through the official SDK, in an agent's turn: a real server from PyPI
(``mcp-server-time``), and a hostile one written to break every promise (``tests/harness/hostile_mcp.py``).

The model is the local OpenAI-compatible endpoint reached by the real ``openai`` client.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from harness.processes import processes_with

from bub_nb.agent import Agent
from bub_nb.agent.mcp import Approvals, McpServers, read_mcp_json, server_spec, servers_from
from bub_nb.agent.models import OpenAIModel
from bub_nb.errors import McpError
from bub_nb.tape import Tape
from bub_nb.testing import OpenAICompatibleServer

pytest.importorskip("mcp")

HOSTILE = str(Path(__file__).parents[1] / "harness" / "hostile_mcp.py")
TIME = {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}


def hostile(name: str, mode: str = "tools", marker: str = "") -> dict[str, Any]:
    return {"command": sys.executable, "args": [HOSTILE, mode, marker or uuid.uuid4().hex]}


def calls_and_results(tape: Tape) -> list[tuple[dict[str, Any], Any, dict[str, Any]]]:
    rows = []
    entries = tape.read()
    for index, entry in enumerate(entries):
        if entry.kind == "tool_call":
            results = entries[index + 1].payload["results"]
            for call, result in zip(entry.payload["calls"], results, strict=True):
                rows.append((call, result, (entry.meta.get("mcp") or {}).get(call["id"], {})))
    return rows


def test_a_time_server_from_pypi_answers_a_turn_and_the_tape_names_its_server(
    tape: Tape, model: OpenAIModel, openai_server: OpenAICompatibleServer
) -> None:
    openai_server.reply_tool_calls([{"name": "mcp_time_get_current_time", "arguments": {"timezone": "UTC"}}])
    openai_server.reply("It is late.")
    with McpServers(servers_from({"time": TIME}, source="python")) as servers:
        agent = Agent(tape, model=model, mcp=servers)
        turn = agent.run("What time is it?")
        assert turn.status == "ok", turn.error
        offered = {tool["function"]["name"] for tool in openai_server.requests[0]["tools"]}
        assert {"mcp_time_get_current_time", "mcp_time_convert_time"} <= offered
        ((call, result, origin),) = calls_and_results(tape)
        assert call["function"]["name"] == "mcp_time_get_current_time"
        assert json.loads(result)["timezone"] == "UTC"
        assert origin["server"] == "time" and origin["tool"] == "get_current_time" and origin["protocol"]
        frame = tape.to_frame().tape.tool_calls()
        assert frame["ok"].tolist() == [True]
        assert frame["tool_dotted"].tolist() == ["mcp.time.get_current_time"]  # the name bub_nb offered it by


def test_a_hostile_server_gives_failures_placeholders_and_bounded_results_and_the_turn_goes_on(
    tape: Tape, model: OpenAIModel, openai_server: OpenAICompatibleServer
) -> None:
    servers = McpServers(
        servers_from(
            {"h": hostile("h"), "garbage": hostile("garbage", "garbage"), "gone": hostile("gone", "exit")},
            source="python",
        ),
        start_seconds=10,
        call_seconds=60,
    )
    with servers:
        tools, problems = servers.tools()
        names = [item.name for item in tools]
        assert "mcp.h.bad_schema" not in names  # a schema that cannot check arguments: left out, said
        assert all(len(name) <= 64 for name in names) and len(set(names)) == len(names)
        assert {"mcp.h.tape_info", "mcp.h.echo"} <= set(names)
        assert any(name.startswith("mcp.h.weird_name") for name in names)
        said = "\n".join(problems)
        assert "'garbage'" in said and "'gone'" in said and "refusing to start" in said
        assert all("\n" not in problem for problem in problems)
        row = next(r for r in servers.status() if r.name == "h")
        assert any("bad_schema" in line for line in row.skipped)

        openai_server.reply_tool_calls(
            [
                {"name": "mcp_h_echo", "arguments": {"text": "hi"}},
                {"name": "mcp_h_lying", "arguments": {"n": 1}},
                {"name": "mcp_h_refuse", "arguments": {}},
                {"name": "mcp_h_picture", "arguments": {}},
                {"name": "mcp_h_flood", "arguments": {}},
                {"name": "mcp_h_tape_info", "arguments": {"text": "shadow sk-live0123456789abcdefXYZ"}},
            ]
        )
        openai_server.reply("done")
        agent = Agent(tape, model=model, mcp=servers, result_budget=200)
        turn = agent.run("use them all")
        assert turn.status == "ok" and turn.text == "done"
        assert any("'garbage'" in notice for notice in turn.notices)
        rows = calls_and_results(tape)
        results = {call["function"]["name"]: result for call, result, _ in rows}
        assert results["mcp_h_echo"] == "echo: hi"
        # the server's own tool, not the builtin; a key in what it returns is redacted like any tool's output
        assert results["mcp_h_tape_info"] == "tape_info: shadow [redacted]"
        assert "image/png" in results["mcp_h_picture"] and "not shown" in results["mcp_h_picture"]
        assert len(results["mcp_h_flood"]) < 5_000  # 10 MB from the server, cut to the tool budget
        assert "n must be a string" in json.dumps(results["mcp_h_lying"])
        calls = tape.to_frame().tape.tool_calls().set_index("tool")
        assert not calls.loc["mcp_h_lying", "ok"] and not calls.loc["mcp_h_refuse", "ok"]
        assert calls.loc["mcp_h_echo", "ok"]
        assert {origin["server"] for _, _, origin in rows} == {"h"}


def test_a_server_that_dies_mid_call_is_one_failed_result_and_starts_again_on_the_next_turn(
    tape: Tape, model: OpenAIModel, openai_server: OpenAICompatibleServer
) -> None:
    marker = uuid.uuid4().hex
    with McpServers(servers_from({"h": hostile("h", marker=marker)}, source="python"), start_seconds=20) as servers:
        agent = Agent(tape, model=model, mcp=servers)
        openai_server.reply_tool_calls([{"name": "mcp_h_die_mid_call", "arguments": {}}])
        openai_server.reply("it died")
        assert agent.run("crash it").status == "ok"
        ((_, result, _),) = calls_and_results(tape)
        assert "stopped during 'die_mid_call'" in json.dumps(result) and "exiting in the middle" in json.dumps(result)
        assert next(r for r in servers.status() if r.name == "h").state == "failed"
        openai_server.reply_tool_calls([{"name": "mcp_h_echo", "arguments": {"text": "back"}}])
        openai_server.reply("fine")
        assert Agent(tape, model=model, mcp=servers).run("again").status == "ok"
        assert calls_and_results(tape)[-1][1] == "echo: back"
    assert processes_with(marker) == []


def test_a_call_that_hangs_times_out_and_an_interrupt_stops_it_at_once(
    tape: Tape, model: OpenAIModel, openai_server: OpenAICompatibleServer
) -> None:
    marker = uuid.uuid4().hex
    servers = McpServers(servers_from({"h": hostile("h", marker=marker)}, source="python"), call_seconds=2)
    with servers:
        openai_server.reply_tool_calls([{"name": "mcp_h_stall", "arguments": {}}])
        openai_server.reply("gave up")
        turn = Agent(tape, model=model, mcp=servers).run("wait")
        assert turn.status == "ok"
        assert "did not answer 'stall' within 2 s" in json.dumps(calls_and_results(tape)[-1][1])

    servers = McpServers(servers_from({"h": hostile("h", marker=marker)}, source="python"), call_seconds=600)
    with servers:
        openai_server.reply_tool_calls([{"name": "mcp_h_stall", "arguments": {}}])
        agent = Agent(tape, model=model, mcp=servers)
        outcome: dict[str, Any] = {}
        runner = threading.Thread(target=lambda: outcome.setdefault("turn", agent.run("wait forever")))
        runner.start()
        connection = None
        for _ in range(2000):  # until the call is in flight on the server's side
            connection = servers._connections.get("h")
            if connection is not None and "stalling" in connection.stderr_tail():
                break
            time.sleep(0.01)
        agent.abort()
        runner.join(60)  # bounds a hang only: the call itself may take ten minutes
        assert not runner.is_alive()
        assert outcome["turn"].status == "interrupted"
    assert processes_with(marker) == []


def test_closing_the_servers_leaves_no_process_behind(tmp_path: Path) -> None:
    marker = uuid.uuid4().hex
    servers = McpServers(servers_from({"a": hostile("a", marker=marker), "b": TIME}, source="python"))
    _, problems = servers.tools()
    assert problems == [] and processes_with(marker)
    servers.close()
    assert processes_with(marker) == []
    assert [row.state for row in servers.status()] == ["stopped", "stopped"] or all(
        row.state in ("stopped", "not started") for row in servers.status()
    )


@pytest.mark.parametrize(
    ("config", "match"),
    [
        ({"x y": TIME}, "must be 1-32 letters"),
        ({"t": {"args": ["x"]}}, "'command' must be the program"),
        ({"t": {"command": "x", "args": "not a list"}}, "'args' must be a list"),
        ({"t": {"url": "ftp://host"}}, "http:// or https://"),
        ({"t": {"type": "sse", "url": "http://127.0.0.1:1/sse"}}, "SSE transport is deprecated"),
        ({"t": {"command": "x", "colour": "red"}}, "unknown field"),
        ({"t": {"command": "x", "env": {"A": 1}}}, "'env' must map names to strings"),
        ([1, 2], "must be an object"),
    ],
)
def test_a_bad_configuration_is_one_line_naming_the_server(config: Any, match: str) -> None:
    with pytest.raises(McpError, match=match) as raised:
        servers_from(config, source="config")
    assert "\n" not in str(raised.value)


def test_a_server_that_cannot_start_says_why_once_and_is_not_retried_on_every_turn() -> None:
    servers = McpServers([server_spec("nope", {"command": "/nonexistent/mcp-server"})])
    tools, problems = servers.tools()
    assert tools == [] and "was not found" in problems[0]
    _, again = servers.tools()
    assert "%mcp restart nope" in again[0]


def test_a_mcp_json_server_is_asked_about_once_and_asked_again_when_its_command_changes(tmp_path: Path) -> None:
    config = {"mcpServers": {"t": {**TIME}}}
    (tmp_path / ".mcp.json").write_text(json.dumps(config))
    asked: list[str] = []

    def ask(spec: Any) -> bool:
        asked.append(spec.name)
        return True

    approvals = tmp_path / "home" / "mcp-approvals.json"
    servers = McpServers(read_mcp_json(tmp_path), approvals=Approvals(approvals), ask=ask)
    with servers:
        tools, problems = servers.tools()
        assert problems == [] and tools and asked == ["t"]
    servers = McpServers(read_mcp_json(tmp_path), approvals=Approvals(approvals), ask=ask)
    with servers:
        servers.tools()
        assert asked == ["t"]  # kept
    config["mcpServers"]["t"]["args"] = [*TIME["args"], "--local-timezone", "Europe/Paris"]
    (tmp_path / ".mcp.json").write_text(json.dumps(config))
    servers = McpServers(read_mcp_json(tmp_path), approvals=Approvals(approvals), ask=lambda spec: None)
    tools, problems = servers.tools()
    assert tools == [] and "is not approved and no one here can approve it" in problems[0]
    servers = McpServers(read_mcp_json(tmp_path), approvals=Approvals(approvals), ask=lambda spec: False)
    tools, problems = servers.tools()
    assert tools == [] and "was denied" in problems[0]
    servers = McpServers(read_mcp_json(tmp_path), approvals=Approvals(approvals), ask=lambda spec: None)
    assert "was denied" in servers.tools()[1][0]  # the denial was kept: not asked again
    with McpServers(read_mcp_json(tmp_path), approvals=Approvals(approvals), allow_mcp_json=True) as servers:
        assert servers.tools()[1] == []
