"""Secrets bub_nb is handed, or that the kernel's environment holds, stay off the tape and away from the model:
``%mcp add`` header and ``env`` values join the redaction set and ``%mcp`` cells are neither recorded nor shown to
the model; ``notebook.inspect`` does not read ``os.environ``, and a tool result quoting a secret-looking
environment value reaches the tape and the model redacted."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from harness.shell import Notebook

from bub_nb.testing import OpenAICompatibleServer

HOSTILE = str(Path(__file__).parents[1] / "harness" / "hostile_mcp.py")
ENV_SECRET = "env-secret-4c1f0a9e7b2d"
PLANTED = "planted-token-9e8d7c6b5a4f3e2d"


@pytest.fixture
def endpoint(nb: Notebook, openai_server: OpenAICompatibleServer, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("BUB_API_BASE", openai_server.base_url)
    monkeypatch.setenv("BUB_API_KEY", "test-key-not-secret")
    nb.run('%config BubMagics.model = "openai:test-model"')
    return openai_server


def tape_text(nb: Notebook) -> str:
    return json.dumps([entry.to_dict() for entry in nb.tape.read()])


def test_an_mcp_env_secret_echoed_by_its_server_reaches_neither_the_tape_nor_the_model(
    nb: Notebook, endpoint: OpenAICompatibleServer
) -> None:
    pytest.importorskip("mcp")
    nb.run("%tape record on")
    nb.run(f"%mcp add h --env API_TOKEN={ENV_SECRET} -- {sys.executable} {HOSTILE} tools marker")
    nb.run("number = 41")
    endpoint.reply_tool_calls([{"name": "mcp_h_echo", "arguments": {"text": f"the token is {ENV_SECRET}"}}])
    endpoint.reply_tool_calls([{"name": "notebook_cells", "arguments": {"n": 5}}])
    endpoint.reply("Done.")
    nb.run("%%bub\nEcho the token, then show my cells")
    sent = json.dumps(endpoint.requests)
    assert ENV_SECRET not in tape_text(nb) and ENV_SECRET not in sent.replace(
        json.dumps(f"the token is {ENV_SECRET}")[1:-1], ""
    )  # only the scripted call's own arguments held it; every result and cell came back redacted
    cells = [
        e.payload["data"]["source"] for e in nb.tape.read(kinds=("event",)) if e.payload["name"] == "notebook.cell"
    ]
    assert cells == ["number = 41"]
    shown_cells = endpoint.requests[-1]["messages"][-1]["content"]
    assert "number = 41" in shown_cells and "%mcp" not in shown_cells
    nb.run("%mcp remove h")


def test_inspect_refuses_the_environment_and_results_are_redacted_for_secret_looking_variables(
    nb: Notebook, endpoint: OpenAICompatibleServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SERVICE_ACCESS_TOKEN", PLANTED)
    nb.run("import os\nsettings = {'plain': 1, 'copied': os.environ['SERVICE_ACCESS_TOKEN']}")
    endpoint.reply_tool_calls(
        [
            {"name": "notebook_inspect", "arguments": {"name": "os.environ"}},
            {"name": "notebook_inspect", "arguments": {"name": "os.environ['SERVICE_ACCESS_TOKEN']"}},
            {"name": "notebook_inspect", "arguments": {"name": "settings"}},
        ]
    )
    endpoint.reply("I looked.")
    nb.run("%%bub\nWhat is in the environment?")
    results = [e for e in nb.tape.read(kinds=("tool_result",))][-1].payload["results"]
    assert "process environment" in json.dumps(results[0]) and "process environment" in json.dumps(results[1])
    assert "[redacted]" in json.dumps(results[2])
    assert PLANTED not in tape_text(nb) and PLANTED not in json.dumps(endpoint.requests)
