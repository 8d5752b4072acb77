"""``%mcp`` in a real IPython shell: servers added by a line, listed, used by ``%%bub``, counted by
``%context --next``, approved once when they come from a ``.mcp.json``, and gone when removed or unloaded."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from harness.processes import processes_with
from harness.shell import Notebook

from bub_nb.testing import OpenAICompatibleServer

pytest.importorskip("mcp")

HOSTILE = Path(__file__).parents[1] / "harness" / "hostile_mcp.py"


def offered(server: OpenAICompatibleServer) -> list[str]:
    return [tool["function"]["name"] for tool in server.last_request.get("tools") or ()]


def test_a_server_added_by_a_line_is_listed_used_by_a_turn_counted_and_removed(nb: Notebook, endpoint: Any) -> None:
    marker = uuid.uuid4().hex
    nb.run(f"%mcp add echoes -- {sys.executable} {HOSTILE} tools {marker}")
    assert "MCP server `echoes` started (stdio)" in nb.shown() and "`mcp.echoes.echo`" in nb.shown()
    table = nb.run("%mcp")
    assert table.loc["echoes", "state"] == "running" and "mcp.echoes.echo" in table.loc["echoes", "tools"]
    assert "bad_schema" in table.loc["echoes", "problem"]

    endpoint.reply_tool_calls([{"name": "mcp_echoes_echo", "arguments": {"text": "from a cell"}}])
    endpoint.reply("done")
    nb.run("%%bub\nEcho something.")
    assert "mcp_echoes_echo" in offered(endpoint)
    call = next(e for e in nb.tape.read() if e.kind == "tool_call")
    assert call.meta["mcp"][call.payload["calls"][0]["id"]]["server"] == "echoes"
    result = next(e for e in nb.tape.read() if e.kind == "tool_result")
    assert result.payload["results"] == ["echo: from a cell"]

    endpoint.reply("only builtins")
    nb.run("%%bub --tools memory.*\nhi")
    assert not any(name.startswith("mcp_") for name in offered(endpoint))
    endpoint.reply("only the server")
    nb.run("%%bub --tools mcp.echoes.*\nhi")
    assert offered(endpoint) and all(name.startswith("mcp_echoes_") for name in offered(endpoint))

    nb.run("%context --next")
    shown = nb.shown()
    assert "mcp_echoes_echo" in shown or "mcp.echoes.echo" in shown

    nb.run("%mcp remove echoes")
    assert processes_with(marker) == []
    assert "No MCP servers" in (nb.run("%mcp") or "") or "No MCP servers" in nb.shown()


@pytest.mark.parametrize(
    ("line", "match"),
    [
        ("%mcp add", r"required: NAME; usage: %mcp add NAME \[--env K=V ...\] -- COMMAND"),
        ("%mcp add x", "needs either -- COMMAND"),
        ("%mcp add x --url http://127.0.0.1:1/mcp -- python", "needs either -- COMMAND"),
        ("%mcp add 'bad name' -- python", "must be 1-32 letters"),
        ("%mcp add x --header Authorization -- python", "takes KEY=VALUE"),
        ("%mcp add x -- /nonexistent/server", "was not found"),
        ("%mcp remove nothing", "No MCP server named 'nothing'"),
        ("%mcp frobnicate", "Unknown %mcp subcommand 'frobnicate'; use one of: list, add, remove"),
        ("%mcp list now", "unrecognized arguments: now; usage: %mcp list"),
        ("%mcp restart -- python", "-- COMMAND goes with %mcp add"),
        ("%mcp approve", "required: NAME; usage: %mcp approve NAME"),
    ],
)
def test_bad_mcp_lines_are_one_line_and_write_nothing(nb: Notebook, line: str, match: str) -> None:
    nb.refused(line, match)


def test_a_mcp_json_server_is_refused_headless_until_approved_and_stops_with_the_extension(
    nb: Notebook, endpoint: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = uuid.uuid4().hex
    config = {"mcpServers": {"beside": {"command": sys.executable, "args": [str(HOSTILE), "tools", marker]}}}
    (tmp_path / ".mcp.json").write_text(json.dumps(config))
    endpoint.reply("no tools from it")
    nb.run("%%bub\nhi")
    assert not any(name.startswith("mcp_") for name in offered(endpoint))
    warned = capsys.readouterr().err
    assert "MCP server 'beside'" in warned and "%mcp approve beside" in warned and warned.count("\n") == 1
    assert processes_with(marker) == []
    endpoint.reply("still none")
    nb.run("%%bub\nhi")
    assert "beside" not in capsys.readouterr().err  # said once
    assert nb.run("%mcp").loc["beside", "state"] == "not approved"

    nb.run("%mcp approve beside")
    endpoint.reply("now it has them")
    nb.run("%%bub\nhi")
    assert "mcp_beside_echo" in offered(endpoint) and processes_with(marker)
    nb.refused("%mcp remove beside", "comes from .*mcp.json")
    nb.run("%unload_ext bub_nb")
    assert processes_with(marker) == []
    nb.run("%load_ext bub_nb")  # the fixture unloads it again
    approvals = json.loads((tmp_path / "home" / "mcp-approvals.json").read_text())
    assert [answer["decision"] for answer in approvals.values()] == ["approved"]


def test_servers_from_the_configuration_trait_are_checked_when_set(nb: Notebook, capsys: Any) -> None:
    nb.run("%config BubMagics.mcp_servers = {'t': {'args': []}}")
    assert "'command' must be the program" in capsys.readouterr().err
    assert nb.magics.mcp_servers == {}


def test_a_tools_selection_starts_only_the_servers_it_could_name(nb: Notebook, endpoint: Any) -> None:
    one, two = uuid.uuid4().hex, uuid.uuid4().hex
    servers = {name: {"command": sys.executable, "args": [str(HOSTILE), "tools", marker]} for name, marker in
               (("one", one), ("two", two))}  # fmt: skip
    nb.run(f"%config BubMagics.mcp_servers = {servers!r}")
    endpoint.reply("only one")
    nb.run("%%bub --tools mcp.one.*\nhi")
    assert offered(endpoint) and all(name.startswith("mcp_one_") for name in offered(endpoint))
    assert processes_with(one) and processes_with(two) == []  # the other server was not started
    assert nb.run("%mcp").loc["two", "state"] == "not started"

    endpoint.reply("both")
    nb.run("%%bub --tools m*\nhi")  # a glob that names MCP tools without spelling "mcp"
    assert {"mcp_one_echo", "mcp_two_echo", "memory_save"} <= set(offered(endpoint))
    nb.run("%unload_ext bub_nb")
    assert processes_with(one) == processes_with(two) == []
    nb.run("%load_ext bub_nb")  # the fixture unloads it again
