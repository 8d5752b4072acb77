"""``bub-nb acp serve`` driven by the ACP SDK's own client over stdio, and by a client that breaks the rules.

The model is the local OpenAI-compatible server reached by the real openai client (streaming, tool calls), or the
offline model. Every turn must land on the tape as a notebook turn would: the same kinds in the same order.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import acp
import pytest
from harness.acp_client import BUB_NB, RecordingClient, acp_agent, server_environment, text_prompt

from bub_nb.agent import Agent, OpenAIModel
from bub_nb.tape import open_tape
from bub_nb.testing import OpenAICompatibleServer

MODEL = "openai:test"


def run(coroutine: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coroutine, 60))


def kinds(home: Path, name: str) -> list[str]:
    return [e.kind for e in open_tape(name, home=home, create=False).read()]


def test_a_prompt_streams_as_chunks_and_lands_on_the_tape_as_a_notebook_turn(
    tmp_path: Path, openai_server: OpenAICompatibleServer
) -> None:
    openai_server.reply(
        "Tea is ready in four minutes", usage={"prompt_tokens": 40, "completion_tokens": 6}, chunk_delay=0.05
    )
    client = RecordingClient()

    async def scenario() -> str:
        async with acp_agent(client, tmp_path, model=MODEL, base_url=openai_server.base_url) as (conn, _):
            session = await conn.new_session(cwd=str(tmp_path))
            answer = await conn.prompt(session_id=session.session_id, prompt=text_prompt("When is tea?"))
            assert answer.stop_reason == "end_turn"
            assert answer.usage.input_tokens == 40 and answer.usage.output_tokens == 6
            return session.session_id

    name = run(scenario())
    chunks = client.of_kind("agent_message_chunk", name)
    assert len(chunks) > 1  # streamed as the words came, not sent whole at the end
    assert client.text(name) == "Tea is ready in four minutes"
    usage = client.of_kind("usage_update", name)[-1]
    assert usage.used > 0 and usage.field_meta["bub_nb"]["turn"] == {
        "input_tokens": 40, "output_tokens": 6, "estimated": False,
    }  # fmt: skip
    tape = open_tape(name, home=tmp_path, create=False)
    entries = tape.read()
    assert [e.payload.get("content") for e in entries if e.kind == "message"] == [
        "When is tea?", "Tea is ready in four minutes",
    ]  # fmt: skip
    turn = [e for e in entries if e.meta.get("run_id")]
    assert [e.kind for e in turn] == ["system", "message", "message", "event"]
    assert all(e.meta.get("source") == "acp" and e.meta.get("cwd") == str(tmp_path) for e in turn)

    # The same turn through Agent.run writes the same kinds in the same order.
    openai_server.reply("Tea is ready in four minutes")
    twin = open_tape("twin", home=tmp_path)
    Agent(twin, OpenAIModel("test", base_url=openai_server.base_url, api_key="test")).run("When is tea?")
    assert kinds(tmp_path, name) == kinds(tmp_path, "twin")


def test_tool_calls_reach_the_client_with_their_results(tmp_path: Path, openai_server: OpenAICompatibleServer) -> None:
    openai_server.reply_tool_calls([{"name": "tape_info", "arguments": {}}], content="Looking.")
    openai_server.reply("The tape is young.")
    client = RecordingClient()

    async def scenario() -> str:
        async with acp_agent(client, tmp_path, model=MODEL, base_url=openai_server.base_url) as (conn, _):
            session = await conn.new_session(cwd=str(tmp_path))
            await conn.prompt(session_id=session.session_id, prompt=text_prompt("How long is the tape?"))
            return session.session_id

    name = run(scenario())
    started = client.of_kind("tool_call", name)
    ended = client.of_kind("tool_call_update", name)
    assert [c.title for c in started] == ["tape.info"] and started[0].status == "in_progress"
    assert [(u.tool_call_id, u.status) for u in ended] == [(started[0].tool_call_id, "completed")]
    result = open_tape(name, home=tmp_path, create=False).query().kinds("tool_result").all()[0]
    assert ended[0].content[0].content.text == result.payload["results"][0]
    assert client.text(name).endswith("The tape is young.")


@pytest.mark.parametrize("permit", ["allow", "reject", None])
def test_python_run_is_the_clients_permission_request(
    tmp_path: Path, openai_server: OpenAICompatibleServer, permit: str | None
) -> None:
    openai_server.reply_tool_calls([{"name": "python_run", "arguments": {"code": "print(6 * 7)"}}])
    openai_server.reply("Done.")
    client = RecordingClient(permit=permit)

    async def scenario() -> str:
        async with acp_agent(client, tmp_path, model=MODEL, base_url=openai_server.base_url) as (conn, _):
            session = await conn.new_session(cwd=str(tmp_path))
            await conn.prompt(session_id=session.session_id, prompt=text_prompt("Compute it"))
            return session.session_id

    name = run(scenario())
    assert [p.raw_input for p in client.permissions] == [{"code": "print(6 * 7)"}]
    tape = open_tape(name, home=tmp_path, create=False)
    result = str(tape.query().kinds("tool_result").all()[0].payload["results"][0])
    ended = client.of_kind("tool_call_update", name)[0]
    if permit == "allow":
        assert "42" in result and ended.status == "completed"
        assert "notebook.cell" in [e.payload["name"] for e in tape.query().kinds("event").all()]
    else:
        assert "42" not in result and ended.status == "failed"
        errors = [e.payload.get("kind") for e in tape.query().kinds("error").all()]
        assert errors == ["tool.denied"]


def test_a_session_is_listed_loaded_and_continued_after_the_client_restarts(
    tmp_path: Path, openai_server: OpenAICompatibleServer
) -> None:
    openai_server.reply("First answer")
    openai_server.reply("Second answer")
    first, second = RecordingClient(), RecordingClient()

    async def before_restart() -> str:
        async with acp_agent(first, tmp_path, model=MODEL, base_url=openai_server.base_url) as (conn, _):
            session = await conn.new_session(cwd=str(tmp_path))
            await conn.prompt(session_id=session.session_id, prompt=text_prompt("First question"))
            return session.session_id

    async def after_restart(name: str) -> list[str]:
        async with acp_agent(second, tmp_path, model=MODEL, base_url=openai_server.base_url) as (conn, _):
            listed = await conn.list_sessions(cwd=str(tmp_path))
            await conn.load_session(cwd=str(tmp_path), session_id=name)
            await conn.prompt(session_id=name, prompt=text_prompt("Second question"))
            return [(s.session_id, s.title, s.cwd) for s in listed.sessions]

    name = run(before_restart())
    assert run(after_restart(name)) == [(name, "First question", str(tmp_path))]
    assert second.text(name, "user_message_chunk") == "First question"
    assert second.text(name).startswith("First answer")  # replayed, then the new answer streamed
    assert second.text(name).endswith("Second answer")
    tape = open_tape(name, home=tmp_path, create=False)
    assert [e.payload["name"] for e in tape.query().kinds("event").all()].count("run") == 2
    assert openai_server.requests[-1]["messages"][-1] == {"role": "user", "content": "Second question"}
    assert {"role": "assistant", "content": "First answer"} in openai_server.requests[-1]["messages"]


def test_comma_commands_are_the_sessions_commands_and_a_comma_prompt_runs_one(tmp_path: Path) -> None:
    client = RecordingClient()

    async def scenario() -> tuple[str, str]:
        async with acp_agent(client, tmp_path) as (conn, _):
            session = await conn.new_session(cwd=str(tmp_path))
            await conn.prompt(session_id=session.session_id, prompt=text_prompt("Remember the kettle"))
            answer = await conn.prompt(
                session_id=session.session_id, prompt=text_prompt(",handoff boiled summarize=true")
            )
            return session.session_id, answer.stop_reason

    name, stop = run(scenario())
    assert stop == "end_turn"
    offered = {c.name for c in client.of_kind("available_commands_update", name)[0].available_commands}
    assert {",help", ",handoff", ",tape.info", ",tape.search"} <= offered
    tape = open_tape(name, home=tmp_path, create=False)
    anchor = tape.query().kinds("anchor").all()[-1]
    assert anchor.payload["name"] == "boiled"
    compaction = client.of_kind("usage_update", name)[-1].field_meta["bub_nb"]["compaction"]
    assert compaction["status"] == "completed" and compaction["anchor"] == "boiled"
    assert compaction["summary"] == anchor.payload["state"]["summary"] != ""
    assert "command" in [e.payload["name"] for e in tape.query().kinds("event").all()]


def test_cancel_during_a_tools_permission_request_ends_the_turn_as_an_interrupted_cell(
    tmp_path: Path, openai_server: OpenAICompatibleServer
) -> None:
    openai_server.reply_tool_calls([{"name": "python_run", "arguments": {"code": "open('x', 'w')"}}], content="Let me")

    class Waiting(RecordingClient):
        asked: asyncio.Event

        async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **kw: Any) -> Any:
            self.permissions.append(tool_call)
            self.asked.set()
            await asyncio.sleep(3600)  # the user never answers: the client cancels the turn instead

    client = Waiting()

    async def scenario() -> tuple[str, str]:
        client.asked = asyncio.Event()
        async with acp_agent(client, tmp_path, model=MODEL, base_url=openai_server.base_url) as (conn, _):
            session = await conn.new_session(cwd=str(tmp_path))
            turn = asyncio.ensure_future(conn.prompt(session_id=session.session_id, prompt=text_prompt("Write x")))
            await client.asked.wait()
            await conn.cancel(session_id=session.session_id)
            return session.session_id, (await turn).stop_reason

    name, stop = run(scenario())
    assert stop == "cancelled"
    assert not (tmp_path / "x").exists()
    tape = open_tape(name, home=tmp_path, create=False)
    run_event = [e for e in tape.read() if e.kind == "event" and e.payload["name"] == "run"][-1]
    assert run_event.payload["data"]["status"] == "interrupted"
    assert [e.payload.get("kind") for e in tape.query().kinds("error").all()][-1] == "interrupted"
    assert tape.query().kinds("tool_result").all(), "the abandoned call still has its result, so views stay valid"


# -- a client that breaks the rules ------------------------------------------------------------------------------


class RawClient:
    """``bub-nb acp serve`` on pipes, spoken to in raw JSON lines: frames no SDK would send."""

    def __init__(self, home: Path, base_url: str | None = None, model: str = "offline") -> None:
        self.process = subprocess.Popen(
            [BUB_NB, "acp", "serve", "--home", str(home), "--model", model],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=(home / "raw.log").open("ab"),
            env=server_environment(home, base_url),
        )  # fmt: skip
        self.ids = iter(range(1, 1000))

    def send(self, frame: str | dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(((frame if isinstance(frame, str) else json.dumps(frame)) + "\n").encode())
        self.process.stdin.flush()

    def request(self, method: str, params: Any) -> int:
        number = next(self.ids)
        self.send({"jsonrpc": "2.0", "id": number, "method": method, "params": params})
        return number

    def read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, "the server closed its output"
        return json.loads(line)

    def answer(self, number: int) -> dict[str, Any]:
        while "id" not in (message := self.read()) or message["id"] != number or "method" in message:
            pass
        return message

    def start(self, cwd: str) -> str:
        self.answer(self.request("initialize", {"protocolVersion": acp.PROTOCOL_VERSION}))
        return self.answer(self.request("session/new", {"cwd": cwd, "mcpServers": []}))["result"]["sessionId"]


def test_malformed_frames_are_answered_with_errors_and_the_server_goes_on(tmp_path: Path) -> None:
    client = RawClient(tmp_path)
    try:
        client.send("this is not json")
        client.send('{"jsonrpc": "2.0", "id": 7, "method": "session/prompt", "params": {"sessionId": 3}}')
        assert client.answer(7)["error"]["code"] == -32602
        client.send('{"jsonrpc": "2.0", "id": 8, "method": "no/such/method", "params": {}}')
        assert client.answer(8)["error"]["code"] == -32601
        prompt = client.request("session/prompt", {"sessionId": "nobody", "prompt": [{"type": "text", "text": "hi"}]})
        assert "No session" in json.dumps(client.answer(prompt)["error"])
        name = client.start(str(tmp_path))
        answer = client.answer(
            client.request("session/prompt", {"sessionId": name, "prompt": [{"type": "text", "text": "hi"}]})
        )
        assert answer["result"]["stopReason"] == "end_turn"
    finally:
        client.process.kill()
        client.process.wait()


def test_a_client_that_disappears_mid_turn_leaves_the_turn_closed_with_its_partial_answer(
    tmp_path: Path, openai_server: OpenAICompatibleServer
) -> None:
    openai_server.reply("one two three four five six seven eight nine ten", chunk_delay=0.3)
    client = RawClient(tmp_path, openai_server.base_url, MODEL)
    name = client.start(str(tmp_path))
    client.request("session/prompt", {"sessionId": name, "prompt": [{"type": "text", "text": "count"}]})
    while client.read().get("params", {}).get("update", {}).get("sessionUpdate") != "agent_message_chunk":
        pass
    assert client.process.stdin is not None and client.process.stdout is not None
    client.process.stdin.close()
    client.process.stdout.close()
    assert client.process.wait(timeout=30) is not None
    tape = open_tape(name, home=tmp_path, create=False)
    entries = tape.read()
    run_event = [e for e in entries if e.kind == "event" and e.payload["name"] == "run"][-1]
    assert run_event.payload["data"]["status"] == "interrupted"
    partial = [e for e in entries if e.kind == "message" and e.payload["role"] == "assistant"][-1]
    assert partial.meta.get("partial") is True and partial.payload["content"].startswith("one")
    assert "ten" not in partial.payload["content"]


def test_session_ids_and_folders_cannot_reach_outside_the_home(tmp_path: Path) -> None:
    home, outside = tmp_path / "home", tmp_path / "outside"
    home.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("the secret")
    client = RawClient(home)
    try:
        name = client.start(str(outside))
        assert "/" not in name
        for session_id in ("../outside/secret", str(outside / "secret.txt"), "x.jsonl", "owner/tape", "a\\b"):
            number = client.request("session/load", {"cwd": str(outside), "sessionId": session_id, "mcpServers": []})
            assert client.answer(number)["error"]["code"] == -32602, session_id
        relative = client.request("session/new", {"cwd": "../outside", "mcpServers": []})
        assert client.answer(relative)["error"]["code"] == -32602
        link = {"type": "resource_link", "uri": (outside / "secret.txt").as_uri(), "name": "secret.txt"}
        prompt = client.request(
            "session/prompt", {"sessionId": name, "prompt": [{"type": "text", "text": "read "}, link]}
        )
        client.answer(prompt)
    finally:
        client.process.kill()
        client.process.wait()
    tape = open_tape(name, home=home, create=False)
    assert "the secret" not in json.dumps([e.to_dict() for e in tape.read()])
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert (home / "tapes" / f"{name}.jsonl").exists()
    assert [p.name for p in (home / "tapes").glob("*.jsonl")] == [f"{name}.jsonl"]


# -- an ACP client CLI from npm --------------------------------------------------------------------------------


def test_acpx_from_npm_runs_a_turn_and_a_comma_command_on_a_tape(tmp_path: Path) -> None:
    """acpx, a headless ACP client, pinned in .ci/clis, starts ``bub-nb acp serve`` itself and prompts it."""
    from harness.clis import cli_binary

    acpx = str(cli_binary("acpx"))
    work = tmp_path / "work"
    work.mkdir()
    agent = f"{BUB_NB} acp serve --home {tmp_path} --model offline"
    env = server_environment(tmp_path)

    def acpx_exec(prompt: str) -> list[dict[str, Any]]:
        done = subprocess.run(
            [acpx, "--agent", agent, "--approve-all", "--format", "json", "--cwd", str(work), "exec", prompt],
            env=env, capture_output=True, text=True, timeout=120, cwd=work,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]

    frames = acpx_exec("hello from acpx")
    updates = [f["params"]["update"] for f in frames if f.get("method") == "session/update"]
    assert any(u["sessionUpdate"] == "available_commands_update" for u in updates)
    said = "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk")
    assert 'Your last message: "hello from acpx"' in said
    (tape_file,) = (tmp_path / "tapes").glob("*.jsonl")
    tape = open_tape(tape_file.stem, home=tmp_path, create=False)
    assert next(e.payload["content"] for e in tape.read() if e.kind == "message") == "hello from acpx"
    assert tape.query().kinds("event").all()[-1].payload["data"]["status"] == "ok"

    frames = acpx_exec(",tape.info")
    said = "".join(
        f["params"]["update"]["content"]["text"]
        for f in frames
        if f.get("method") == "session/update" and f["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    )
    assert "entries" in said
