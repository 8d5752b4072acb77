"""``bub-nb mcp serve``: the tapes of a home read by the official SDK's client over stdio and streamable HTTP,
retracted entries marked, refusals one line, writing only when allowed; and bub_nb's own agent using it as a
server."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harness.processes import free_port, listening

import bub_nb
from bub_nb.agent import Agent
from bub_nb.agent.mcp import McpServers, servers_from
from bub_nb.agent.models import OpenAIModel
from bub_nb.tape import open_tape
from bub_nb.testing import OpenAICompatibleServer

pytest.importorskip("mcp")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    tape = open_tape("lesson", home=home)
    tape.ensure_bootstrap_anchor()
    tape.append_message({"role": "user", "content": "The budget is 1,200 EUR."})
    tape.append_message({"role": "assistant", "content": "Noted: 1,200 EUR."})
    tape.handoff("trip/decided", {"summary": "Budget 1,200 EUR [#3]", "next_steps": "book"})
    wrong = tape.append_message({"role": "user", "content": "my password is hunter2, oops"})
    tape.retract(wrong.id, reason="pasted by mistake")
    tape.append_message({"role": "user", "content": "Which train?"})
    return home


def serve_command(home: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "bub_nb", "mcp", "serve", "--home", str(home), *extra]


def stdio(home: Path, *extra: str) -> Any:
    from mcp.client.stdio import StdioServerParameters

    command = serve_command(home, *extra)
    return StdioServerParameters(command=command[0], args=command[1:])


async def session(target: Any, work: Any) -> Any:
    from mcp import Client

    async with Client(target) as client:
        return await work(client)


def data(result: Any) -> Any:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        found = result.structured_content
        return found.get("result", found) if isinstance(found, dict) and set(found) == {"result"} else found
    return json.loads(result.content[0].text)


def test_a_client_reads_tapes_views_search_and_entries_and_a_retracted_entry_is_marked(home: Path) -> None:
    async def work(client: Any) -> dict[str, Any]:
        listed = await client.list_tools()
        return {
            "tools": {tool.name for tool in listed.tools},
            "read_only": {tool.name for tool in listed.tools if tool.annotations and tool.annotations.read_only_hint},
            "server": client.server_info,
            "tapes": data(await client.call_tool("list_tapes", {})),
            "anchors": data(await client.call_tool("anchors", {"tape": "lesson"})),
            "view": data(await client.call_tool("view", {"tape": "lesson", "mode": "last"})),
            "full": data(await client.call_tool("view", {"tape": "lesson", "mode": "full"})),
            "search": data(await client.call_tool("search", {"query": "hunter2"})),
            "entries": data(await client.call_tool("entries", {"tape": "lesson", "start": 2, "end": 3})),
            "missing": await client.call_tool("view", {"tape": "lesson", "mode": "no/such/anchor"}),
            "nosuch": await client.call_tool("anchors", {"tape": "nosuch"}),
            "resource": await client.read_resource("tape://lesson/entry/3"),
            "anchor": await client.read_resource("tape://lesson/anchor/trip/decided"),
            "listed": (await client.list_resources()).resources,
        }

    seen = asyncio.run(session(stdio(home), work))
    assert {"list_tapes", "anchors", "view", "search", "entries", "turn", "retention"} <= seen["tools"]
    assert not {"handoff", "append"} & seen["tools"]
    assert seen["read_only"] == seen["tools"]  # every tool says so to the client
    assert seen["server"].name == "bub_nb" and seen["server"].version == bub_nb.__version__
    assert seen["tapes"][0]["tape"] == "lesson" and seen["tapes"][0]["entries"] >= 7
    assert [a["name"] for a in seen["anchors"]][-1] == "trip/decided"
    last = json.dumps(seen["view"]["messages"])
    assert "Budget 1,200 EUR" in last and "Which train?" in last and "hunter2" not in last
    assert "hunter2" not in json.dumps(seen["full"]["messages"]) and seen["full"]["left_out_retracted"]
    (hit,) = seen["search"]
    assert hit["retracted"] is True and hit["address"].startswith("tape://lesson/entry/")
    assert [e["id"] for e in seen["entries"]] == [2, 3]
    assert seen["missing"].is_error and "no/such/anchor" in seen["missing"].content[0].text
    assert seen["nosuch"].is_error and "\n" not in seen["nosuch"].content[0].text
    assert "1,200 EUR" in seen["resource"].contents[0].text
    assert "trip/decided" in seen["anchor"].contents[0].text or "decided" in seen["anchor"].contents[0].text
    listed = {resource.uri: resource for resource in seen["listed"]}
    assert set(listed) == {"tape://lesson/anchor/session/start", "tape://lesson/anchor/trip/decided"}
    assert "Budget 1,200 EUR" in (listed["tape://lesson/anchor/trip/decided"].description or "")


def test_writing_is_offered_only_when_allowed_and_goes_through_the_tapes_checks(home: Path) -> None:
    async def work(client: Any) -> dict[str, Any]:
        listed = (await client.list_tools()).tools
        return {
            "tools": {tool.name for tool in listed},
            "writes": {tool.name: tool.annotations for tool in listed if tool.name in ("handoff", "append")},
            "handoff": data(await client.call_tool("handoff", {"tape": "lesson", "name": "phase/2", "summary": "s"})),
            "memory": await client.call_tool("handoff", {"tape": "lesson", "name": "memory/open"}),
            "append": data(await client.call_tool("append", {"tape": "lesson", "content": "from another agent"})),
            "role": await client.call_tool("append", {"tape": "lesson", "content": "x", "role": "system"}),
        }

    before = len(open_tape("lesson", home=home))
    seen = asyncio.run(session(stdio(home, "--allow-write"), work))
    assert {"handoff", "append"} <= seen["tools"]
    for hints in seen["writes"].values():  # they write, but only append: nothing is destroyed
        assert hints.read_only_hint is False and hints.destructive_hint is False
    assert seen["memory"].is_error and seen["role"].is_error
    tape = open_tape("lesson", home=home)
    assert len(tape) == before + 3  # the anchor, its handoff event, the message: the refusals wrote nothing
    assert tape.read()[-1].payload["content"] == "from another agent"


TOKEN = "a-token-for-this-test-only-0123456789"


@pytest.fixture
def http_server(home: Path, tmp_path: Path) -> Iterator[str]:
    port = free_port()
    (tmp_path / "token").write_text(TOKEN + "\n")
    command = serve_command(home, "--http", f"127.0.0.1:{port}", "--token-file", str(tmp_path / "token"))
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    with listening(process, port):
        yield f"http://127.0.0.1:{port}/mcp"


def with_headers(url: str, headers: dict[str, str]) -> Any:
    """The SDK's streamable HTTP transport to ``url`` sending ``headers`` on every request."""
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    return streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))


def test_the_same_tools_over_streamable_http_for_a_client_presenting_the_token(http_server: str) -> None:
    async def work(client: Any) -> Any:
        return data(await client.call_tool("search", {"query": "train", "tape": "lesson"}))

    (hit,) = asyncio.run(session(with_headers(http_server, {"Authorization": f"Bearer {TOKEN}"}), work))
    assert hit["payload"]["content"] == "Which train?"


@pytest.mark.parametrize(
    "headers", [{}, {"Authorization": "Bearer wrong-token-0123456789abcdef"}, {"Authorization": TOKEN}]
)
def test_a_client_without_the_token_is_refused_401_and_reads_nothing(http_server: str, headers: dict[str, str]) -> None:
    import httpx2

    async def work(client: Any) -> Any:
        return data(await client.call_tool("search", {"query": "train", "tape": "lesson"}))

    with pytest.raises(ExceptionGroup, match="TaskGroup"):  # the SDK's client fails to connect
        asyncio.run(session(with_headers(http_server, headers), work))
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    answer = httpx2.post(
        http_server,
        json=initialize,
        headers={**headers, "Accept": "application/json, text/event-stream"},
    )
    assert answer.status_code == 401 and "Which train" not in answer.text


def test_a_generated_token_is_printed_once_and_opens_the_server(home: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "BUB_NB_MCP_TOKEN"}
    process = subprocess.Popen(
        serve_command(home, "--http", f"127.0.0.1:{port}"), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
    )
    with listening(process, port):
        assert process.stderr is not None
        line = process.stderr.readline().decode()
        token = re.search(r"Authorization: Bearer (\S+?)'", line).group(1)  # type: ignore[union-attr]

        async def work(client: Any) -> Any:
            return data(await client.call_tool("list_tapes", {}))

        url = f"http://127.0.0.1:{port}/mcp"
        tapes = asyncio.run(session(with_headers(url, {"Authorization": f"Bearer {token}"}), work))
    assert [row["tape"] for row in tapes] == ["lesson"]


def test_a_forged_host_is_refused_even_with_the_token(http_server: str) -> None:
    import httpx2

    answer = httpx2.post(
        http_server,
        json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
        headers={"Authorization": f"Bearer {TOKEN}", "Host": "evil.example:80", "Accept": "application/json"},
    )
    assert answer.status_code in (400, 403, 421)


def test_a_bind_beyond_loopback_is_refused_unless_allowed_remote(home: Path) -> None:
    refused = subprocess.run(serve_command(home, "--http", "0.0.0.0:0"), capture_output=True, text=True, timeout=120)
    assert refused.returncode != 0 and "--allow-remote" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1


def test_bub_nbs_agent_reads_another_tape_through_its_own_server(
    home: Path, tmp_path: Path, model: OpenAIModel, openai_server: OpenAICompatibleServer
) -> None:
    command = serve_command(home)
    config = {"tapes": {"command": command[0], "args": command[1:]}}
    openai_server.reply_tool_calls([{"name": "mcp_tapes_search", "arguments": {"query": "budget"}}])
    openai_server.reply("The budget was 1,200 EUR.")
    tape = open_tape("reader", home=tmp_path / "reader-home")
    with McpServers(servers_from(config, source="python")) as servers:
        turn = Agent(tape, model=model, mcp=servers).run("What was the budget in the lesson?")
    assert turn.status == "ok"
    result = next(e for e in tape.read() if e.kind == "tool_result").payload["results"][0]
    assert "1,200 EUR" in result and "tape://lesson/entry/" in result
    sent = json.dumps(openai_server.requests[1]["messages"])
    assert "tape://lesson/entry/" in sent


OUTSIDE = '{"id": 1, "kind": "message", "payload": {"role": "user", "content": "outside secret"}, "date": "x"}\n'


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A tape-shaped file outside the served home, and a link inside the home's tapes folder pointing at it."""
    target = tmp_path / "elsewhere" / "private.jsonl"
    target.parent.mkdir()
    target.write_text(OUTSIDE)
    return target


async def refused_read(client: Any, uri: str) -> str:
    """What a client is told when reading ``uri`` fails (the SDK raises); a read that succeeds fails the test."""
    try:
        read = await client.read_resource(uri)
    except Exception as error:
        return str(error)
    raise AssertionError(f"{uri} was read: {read}")


def test_a_client_naming_a_path_or_a_link_out_of_the_home_reads_and_writes_nothing_there(
    home: Path, outside: Path
) -> None:
    (home / "tapes" / "linked.jsonl").symlink_to(outside)
    asked = [
        str(outside),
        str(outside)[: -len(".jsonl")],
        "../../elsewhere/private",
        "../../elsewhere/private.jsonl",
        "..",
        "linked",
        "lesson.jsonl",
    ]

    async def work(client: Any) -> dict[str, Any]:
        return {
            "tapes": data(await client.call_tool("list_tapes", {})),
            "entries": [await client.call_tool("entries", {"tape": name, "start": 1}) for name in asked],
            "appends": [await client.call_tool("append", {"tape": name, "content": "planted"}) for name in asked],
            "handoffs": [await client.call_tool("handoff", {"tape": name, "name": "x/y"}) for name in asked],
            "resource": await refused_read(client, "tape://linked/entry/1"),
        }

    before = len(open_tape("lesson", home=home))
    seen = asyncio.run(session(stdio(home, "--allow-write"), work))
    assert "outside secret" not in seen["resource"]
    assert [row["tape"] for row in seen["tapes"]] == ["lesson"]
    for result in [*seen["entries"], *seen["appends"], *seen["handoffs"]]:
        said = result.content[0].text
        assert result.is_error and "\n" not in said and "outside secret" not in said
        assert "plain tape name" in said or "symbolic link" in said
    assert outside.read_text() == OUTSIDE
    assert len(open_tape("lesson", home=home)) == before


def test_list_tapes_names_a_bub_sidecar_under_its_owner(home: Path) -> None:
    sidecar = open_tape("lesson__sidecar__spill", home=home)  # as Bub names the spill sidecar of tape "lesson"
    sidecar.append_event("spill.manifest", {"handle": "0" * 32, "chunks": 0, "bytes": 0, "chars": 0, "lines": 1})

    async def work(client: Any) -> Any:
        return data(await client.call_tool("list_tapes", {}))

    tapes = asyncio.run(session(stdio(home), work))
    assert [(row["tape"], row["sidecars"]) for row in tapes] == [("lesson", ["spill"])]
    assert tapes[0]["entries"] == len(open_tape("lesson", home=home))


def test_a_tape_in_bubs_next_format_is_served_as_a_tape(home: Path) -> None:
    example = Path(__file__).parents[1] / "data" / "bub_cloudevents" / "0123456789abcdef__fedcba9876543210.jsonl"
    (home / "tapes" / example.name).write_bytes(example.read_bytes())
    name = example.name[: -len(".jsonl")]

    async def work(client: Any) -> Any:
        return {
            "tapes": data(await client.call_tool("list_tapes", {})),
            "view": data(await client.call_tool("view", {"tape": name, "mode": "full"})),
        }

    seen = asyncio.run(session(stdio(home), work))
    row = next(row for row in seen["tapes"] if row["tape"] == name)
    assert (row["entries"], row["last_anchor"]) == (7, "phase/start")
    assert [m["role"] for m in seen["view"]["messages"]][-3:] == ["tool", "assistant", "user"]
