"""Claude Code, the real CLI, as a client of ``bub-nb mcp serve``: the scripted model (``harness.cli_endpoint``)
asks for the server's ``search`` tool, Claude Code runs it against the server over stdio, and the tape's text is then
in the request Claude Code sends next, in its own transcript, and in the tape bub_nb imports from that transcript.

Claude Code defers MCP tools: the first request names them in a system reminder (or says the server is still
connecting) and offers ``ToolSearch``, which loads a tool's schema (a keyword search waits for a connecting server);
only then is the tool in the request's ``tools``. The script follows what each request offers, so it also holds
should a version list the tool at once. The oracle is a plain ``json`` pass over the requests and
the transcript, sharing nothing with ``bub_nb.imports``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from harness.cli_endpoint import Reply, Tool
from harness.clis import cli_binary, cli_home

from bub_nb import import_log, open_tape

pytest.importorskip("mcp")

SEARCH = "mcp__bub__search"
"""The name Claude Code gives the ``search`` tool of the server it calls ``bub``."""

TAPE_TEXT = "The budget is 1,200 EUR for the Lisbon trip."
RETRACTED = "Lisbon card PIN 4321, pasted by mistake"
ANSWER = "The lesson tape says the budget is 1,200 EUR."


def tool_uses(messages: list[dict[str, Any]]) -> dict[str, str]:
    """Every ``tool_use`` id in ``messages`` with the tool's name."""
    return {
        block["id"]: block["name"]
        for message in messages if message.get("role") == "assistant" and isinstance(message.get("content"), list)
        for block in message["content"] if isinstance(block, dict) and block.get("type") == "tool_use"
    }  # fmt: skip


def tool_results(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """Every ``tool_result`` in ``messages`` by the id of its call."""
    return {
        block["tool_use_id"]: block
        for message in messages if isinstance(message.get("content"), list)
        for block in message["content"] if isinstance(block, dict) and block.get("type") == "tool_result"
    }  # fmt: skip


def reply(api: str, body: dict[str, Any]) -> Reply:
    """The script: load the search tool when it is deferred, search the tapes, answer from what came back."""
    messages = body.get("messages") or []
    offered = {tool.get("name") for tool in body.get("tools") or ()}
    called = set(tool_uses(messages).values())
    if SEARCH in called:
        return Reply.text(ANSWER, input_tokens=600, output_tokens=12)
    if SEARCH in offered:
        return Reply((Tool(SEARCH, {"query": "Lisbon", "tape": "lesson"}),), 400, 20)
    if "ToolSearch" in offered and "ToolSearch" not in called:  # a keyword waits for a server still connecting
        return Reply((Tool("ToolSearch", {"query": "+bub search", "max_results": 1}),), 300, 15)
    return Reply.text("Noted.", input_tokens=100, output_tokens=2)  # a side request, or no server: no search


@pytest.fixture
def bub_home(tmp_path: Path) -> Path:
    home = tmp_path / "bub-home"
    tape = open_tape("lesson", home=home)
    tape.ensure_bootstrap_anchor()
    tape.append_message({"role": "user", "content": TAPE_TEXT})
    wrong = tape.append_message({"role": "user", "content": RETRACTED})
    tape.retract(wrong.id, reason="pasted by mistake")
    return home


def serve_command(home: Path) -> list[str]:
    return [sys.executable, "-m", "bub_nb", "mcp", "serve", "--home", str(home)]


def test_claude_code_searches_a_tape_through_bub_nb_mcp_serve_and_its_transcript_imports_with_the_result(
    bub_home: Path, tmp_path: Path
) -> None:
    cli_binary("claude")
    command = serve_command(bub_home)
    config = tmp_path / "bub.mcp.json"
    config.write_text(json.dumps({"mcpServers": {"bub": {"command": command[0], "args": command[1:]}}}))
    with cli_home(tmp_path, reply) as cli:
        # As a user allows one server's tools in print mode: no bypass of permissions.
        printed = cli.claude(
            "What budget does the lesson tape hold?", "--mcp-config", str(config), "--strict-mcp-config",
            allow="mcp__bub", bypass=False,
        )  # fmt: skip
        requests = [r.body for r in cli.endpoint.model_requests("anthropic")]
        [log] = cli.claude_logs()
    assert printed["result"] == ANSWER and not printed["is_error"]

    # The request after the tool ran carries the tape's text as the search's result.
    after = next(body for body in requests if SEARCH in tool_uses(body["messages"]).values())
    [call_id] = [i for i, name in tool_uses(after["messages"]).items() if name == SEARCH]
    sent = tool_results(after["messages"])[call_id]
    assert sent.get("is_error") is not True
    hits = json.loads(sent["content"] if isinstance(sent["content"], str) else sent["content"][0]["text"])
    hits = hits.get("result", hits) if isinstance(hits, dict) else hits
    assert [hit["payload"]["content"] for hit in hits] == [RETRACTED, TAPE_TEXT]  # newest first
    assert hits[0]["retracted"] is True and "retracted" not in hits[1]
    assert hits[1]["address"] == f"tape://lesson/entry/{hits[1]['id']}"

    # Claude Code's own transcript holds that result for that call.
    records = [json.loads(line) for line in log.read_text().splitlines()]
    messages = [r["message"] for r in records if isinstance(r.get("message"), dict)]
    assert tool_uses(messages)[call_id] == SEARCH
    logged = tool_results(messages)[call_id]
    assert TAPE_TEXT in json.dumps(logged["content"]) and logged.get("is_error") is not True

    # Imported, the call is one row of tool_calls(): answered, ok, with the tape's text.
    report = import_log(log, home=tmp_path / "imported")
    assert report.mapped + report.kept == report.records
    calls = open_tape(report.tape, home=tmp_path / "imported").to_frame().tape.tool_calls().set_index("call_id")
    row = calls.loc[call_id]
    assert row["tool"] == SEARCH and row["tool_dotted"] == "mcp.bub.search"
    assert bool(row["ok"]) and TAPE_TEXT in json.dumps(row["result"]) and row["arguments"]["query"] == "Lisbon"


def test_the_lines_the_docs_give_add_the_server_and_claude_code_uses_it(bub_home: Path, tmp_path: Path) -> None:
    cli_binary("claude")
    with cli_home(tmp_path, reply) as cli:
        added = cli.claude_command("mcp", "add", "bub", "--", *serve_command(bub_home))
        assert added.returncode == 0, added.stderr
        printed = cli.claude("What budget does the lesson tape hold?", allow="mcp__bub", bypass=False)
        requests = [r.body for r in cli.endpoint.model_requests("anthropic")]
    assert printed["result"] == ANSWER
    after = next(body for body in requests if SEARCH in tool_uses(body["messages"]).values())
    assert TAPE_TEXT in json.dumps(list(tool_results(after["messages"]).values()))
