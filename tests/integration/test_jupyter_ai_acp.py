"""jupyter-ai, a client this project did not write, drives ``bub-nb acp serve`` from JupyterLab's chat.

A real ``jupyter-server`` runs ``jupyter-ai-acp-client`` (pinned in ``.ci/jupyter-ai/requirements.txt``, in its own
environment: ``harness.jupyter_ai``) with a persona that starts the suite's ``bub-nb acp serve`` on a temporary
home; the test is the browser, speaking jupyterlab-chat's WebSocket at ``/api/chat/ws/<path>``. The model is the
local OpenAI-compatible server. The reply must reach the chat, and the turn must land on the tape as a notebook
turn would; on a notebook's tape handed to another agent, the chat shows the one-line refusal instead.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from harness.acp_client import server_environment
from harness.jupyter_ai import BUB_NB, PERSONA_ID, jupyter_ai_server, send_frame
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

from bub_nb.agent import Agent, OpenAIModel
from bub_nb.agent.team import Team
from bub_nb.tape import open_tape
from bub_nb.tape.locations import tapes_home
from bub_nb.testing import OpenAICompatibleServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

ANSWER = "The kettle boils in four minutes"


async def _chat_until(url: str, frame: dict[str, Any], done: Any, timeout: float) -> list[dict[str, Any]]:
    """Open the chat's WebSocket, send ``frame`` once connected, and read server frames until ``done(frames)``
    (asked at least every half second)."""
    socket = await websocket_connect(HTTPRequest(url, request_timeout=30))
    frames: list[dict[str, Any]] = []
    try:
        deadline = time.monotonic() + timeout
        while not done(frames):
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no reply in {timeout:.0f} s; frames: {json.dumps(frames)[-3000:]}")
            try:
                raw = await asyncio.wait_for(socket.read_message(), min(left, 0.5))
            except TimeoutError:
                continue  # nothing new: ask done() again, it may look beyond the frames
            if raw is None:
                raise ConnectionError(f"the chat closed its WebSocket ({socket.close_code}, {socket.close_reason})")
            frames.append(json.loads(raw))
            if frames[-1].get("action") == "connection" and len(frames) == 1:
                socket.write_message(json.dumps(frame))
    finally:
        socket.close()
    return frames


def _persona_messages(frames: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The persona's messages, each as last sent (a streamed reply is sent again as it grows)."""
    return {f["message"]["id"]: f["message"] for f in frames if f.get("action") == "message"
            and f["message"].get("sender") == PERSONA_ID}  # fmt: skip


def _runs(home: Path) -> list[dict[str, Any]]:
    """The ``run`` events of every tape under ``home``: one per finished turn."""
    return [
        e.payload["data"]
        for path in tapes_home(str(home)).glob("*.jsonl")
        for e in open_tape(path.stem, home=home, create=False).query().kinds("event").all()
        if e.payload.get("name") == "run"
    ]


def test_a_chat_message_to_the_bub_nb_persona_is_answered_and_lands_on_the_tape(
    tmp_path: Path, openai_server: OpenAICompatibleServer
) -> None:
    openai_server.reply(ANSWER, usage={"prompt_tokens": 30, "completion_tokens": 7}, chunk_delay=0.02)
    home, root = tmp_path / "home", tmp_path / "lab"
    root.mkdir()
    command = [BUB_NB, "acp", "serve", "--home", str(home), "--model", "openai:test"]
    env = server_environment(home, openai_server.base_url)
    with jupyter_ai_server(root, command, env) as server:

        def answered(frames: list[dict[str, Any]]) -> bool:
            """The reply is in the chat and its turn closed on the tape (the server may stop then)."""
            shown = any(ANSWER in m.get("body", "") for m in _persona_messages(frames).values())
            return shown and any(_runs(home))

        try:
            frames = asyncio.run(
                _chat_until(server.ws_url("kitchen.chat"), send_frame("When does the kettle boil?"), answered, 180)
            )
        except (TimeoutError, ConnectionError) as exc:
            pytest.fail(f"{exc}\n--- jupyter-server log ---\n{server.log_text()[-4000:]}")

    (reply,) = [m for m in _persona_messages(frames).values() if ANSWER in m.get("body", "")]
    assert reply["body"].strip() == ANSWER

    (tape_file,) = tapes_home(str(home)).glob("*.jsonl")  # the one session the persona opened: one tape
    tape = open_tape(tape_file.stem, home=home, create=False)
    entries = tape.read()
    messages = [e for e in entries if e.kind == "message"]
    assert [m.payload["role"] for m in messages] == ["user", "assistant"]
    assert messages[0].payload["content"].endswith("When does the kettle boil?")
    assert messages[1].payload["content"] == ANSWER
    turn = [e for e in entries if e.meta.get("run_id")]
    assert all(e.meta.get("source") == "acp" and e.meta.get("cwd") == str(root) for e in turn)
    assert [run["status"] for run in _runs(home)] == ["ok"]
    chat_file = json.loads((root / "kitchen.chat").read_text())
    assert chat_file["metadata"]["acp_session_ids"][PERSONA_ID] == tape.name  # the chat remembers its tape

    # The same turn through Agent.run, as a notebook cell runs it, writes the same kinds in the same order.
    openai_server.reply(ANSWER)
    twin = open_tape("twin", home=home)
    Agent(twin, OpenAIModel("test", base_url=openai_server.base_url, api_key="test")).run("When does it boil?")
    assert [e.kind for e in entries] == [e.kind for e in twin.read()]


def test_a_chat_on_a_notebook_tape_handed_to_another_agent_shows_the_refusal_and_writes_nothing(
    tmp_path: Path,
) -> None:
    """The chat's session is a notebook's tape whose ``main`` handed the conversation to ``rev``: jupyter-ai loads
    it, and its prompt is refused in one line naming the holder; the chat shows that, the tapes gain nothing."""
    home, root = tmp_path / "home", tmp_path / "lab"
    root.mkdir()
    notebook = open_tape("analysis", home=home)
    Agent(notebook, "offline").run("The March sales were 120, 95 and 130.")
    Team(notebook, ["rev"]).handoff("h1", to="rev")
    before = {p.name: p.read_bytes() for p in tapes_home(str(home)).glob("*.jsonl")}
    (root / "sales.chat").write_text(json.dumps({"metadata": {"acp_session_ids": {PERSONA_ID: notebook.name}}}))
    command = [BUB_NB, "acp", "serve", "--home", str(home), "--model", "offline"]
    with jupyter_ai_server(root, command, server_environment(home)) as server:

        def refused(frames: list[dict[str, Any]]) -> bool:
            return any("-32600" in m.get("body", "") for m in _persona_messages(frames).values())

        try:
            frames = asyncio.run(_chat_until(server.ws_url("sales.chat"), send_frame("And the median?"), refused, 120))
        except (TimeoutError, ConnectionError) as exc:
            pytest.fail(f"{exc}\n--- jupyter-server log ---\n{server.log_text()[-4000:]}")

    (shown,) = [m["body"] for m in _persona_messages(frames).values() if "-32600" in m.get("body", "")]
    assert "'main' handed the conversation to 'rev'" in shown and f"session/load '{notebook.name}~rev'" in shown
    assert {p.name: p.read_bytes() for p in tapes_home(str(home)).glob("*.jsonl")} == before
