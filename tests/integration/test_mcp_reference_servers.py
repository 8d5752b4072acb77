"""The protocol's own reference server (``@modelcontextprotocol/server-everything`` from npm) as a server for the
agent, over stdio and streamable HTTP: text, images, structured content and resource links reach the tape as text
the model reads, and the server never sees the user's API key."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from harness.clis import cli_binary
from harness.processes import free_port, listening

from bub_nb.agent import Agent
from bub_nb.agent.mcp import McpServers, servers_from
from bub_nb.agent.models import OpenAIModel
from bub_nb.tape import Tape
from bub_nb.testing import OpenAICompatibleServer

pytest.importorskip("mcp")


def results_by_tool(tape: Tape) -> dict[str, Any]:
    entries = tape.read()
    found: dict[str, Any] = {}
    for index, entry in enumerate(entries):
        if entry.kind == "tool_call":
            results = entries[index + 1].payload["results"]
            for call, result in zip(entry.payload["calls"], results, strict=True):
                found[call["function"]["name"]] = result
    return found


def test_the_reference_server_over_stdio_answers_text_images_and_structured_content(
    tape: Tape, model: OpenAIModel, openai_server: OpenAICompatibleServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-that-must-not-leak-0123456789")
    program = str(cli_binary("mcp-server-everything"))
    openai_server.reply_tool_calls(
        [
            {"name": "mcp_every_echo", "arguments": {"message": "hello"}},
            {"name": "mcp_every_get-sum", "arguments": {"a": 2, "b": 40}},
            {"name": "mcp_every_get-tiny-image", "arguments": {}},
            {"name": "mcp_every_get-structured-content", "arguments": {"location": "New York"}},
            {"name": "mcp_every_get-resource-links", "arguments": {"count": 2}},
            {"name": "mcp_every_get-env", "arguments": {}},
        ]
    )
    openai_server.reply("All six answered.")
    with McpServers(servers_from({"every": {"command": program, "args": ["stdio"]}}, source="python")) as servers:
        turn = Agent(tape, model=model, mcp=servers).run("Try the reference server.")
    assert turn.status == "ok" and turn.text == "All six answered."
    results = results_by_tool(tape)
    assert results["mcp_every_echo"] == "Echo: hello"
    assert "42" in results["mcp_every_get-sum"]
    assert "[image image/png" in results["mcp_every_get-tiny-image"]
    assert json.loads(results["mcp_every_get-structured-content"])["temperature"] is not None
    assert results["mcp_every_get-resource-links"].count("[resource demo://") == 2
    assert "sk-test-key" not in json.dumps(results) and "sk-test-key" not in tape.path.read_text()


@pytest.fixture
def streamable_http() -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [str(cli_binary("mcp-server-everything")), "streamableHttp"],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    with listening(process, port):
        yield f"http://127.0.0.1:{port}/mcp"


def test_the_reference_server_over_streamable_http(
    streamable_http: str, tape: Tape, model: OpenAIModel, openai_server: OpenAICompatibleServer
) -> None:
    openai_server.reply_tool_calls([{"name": "mcp_web_echo", "arguments": {"message": "over http"}}])
    openai_server.reply("ok")
    config = {"web": {"type": "http", "url": streamable_http, "headers": {"X-Test": "1"}}}
    with McpServers(servers_from(config, source="python")) as servers:
        assert Agent(tape, model=model, mcp=servers).run("echo").status == "ok"
        (row,) = servers.status()
        assert row.transport == "http" and "X-Test" in row.target and "1" not in row.target.split("headers")[1]
    assert results_by_tool(tape)["mcp_web_echo"] == "Echo: over http"
    call = next(e for e in tape.read() if e.kind == "tool_call")
    (origin,) = call.meta["mcp"].values()
    assert origin["server"] == "web" and origin["tool"] == "echo"
