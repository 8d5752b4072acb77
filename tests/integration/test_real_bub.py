"""The real Bub 0.5.1 (from PyPI, in a Python 3.12 environment of its own) reads a notebook's tape as the notebook does.

``bub -w <folder> run --session-id <notebook>`` opens the notebook's tape in the shared Bub home, and the messages
it sends the model (behind the local OpenAI-compatible endpoint) are compared with the ones bub_nb's next turn
would send: the same conversation, after handoffs, memory saves, forks and a reset.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harness.bub import PLUGIN_PINS, bub_python, bub_venv, run_bub

from bub_nb.agent import Agent
from bub_nb.agent.eventloop import run_sync
from bub_nb.agent.models import OpenAIModel
from bub_nb.agent.preflight import request_preview
from bub_nb.tape import FileTapeStore, Tape
from bub_nb.tape.names import session_tape_name
from bub_nb.testing import OpenAICompatibleServer

pytestmark = pytest.mark.integration

SESSION = "lesson.ipynb"
NEXT = "What do we know so far?"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "bub-home"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


@pytest.fixture
def agent(openai_server: OpenAICompatibleServer, home: Path, workspace: Path) -> Iterator[Agent]:
    tape = Tape(session_tape_name(workspace, SESSION), FileTapeStore(home / "tapes"))
    model = OpenAIModel("bub-nb-test", base_url=openai_server.base_url, api_key="test", timeout=60, max_retries=0)
    yield Agent(tape, model)
    run_sync(model.aclose())


def conversation(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A request's messages without its system prompt and the prompt it asks: what it recalls of the tape."""
    recalled = [message for message in messages if message.get("role") != "system"]
    assert recalled and recalled[-1]["role"] == "user"
    return recalled[:-1]


def bub_recalls(server: OpenAICompatibleServer, home: Path, workspace: Path) -> list[dict[str, Any]]:
    """What the real ``bub run`` sends the model of the notebook's tape."""
    before = len(server.requests)
    done = run_bub(home, server.base_url, "-w", str(workspace), "run", "--session-id", SESSION, NEXT)
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(server.requests) > before, f"Bub asked no model: {done.stdout[-2000:]}"
    return conversation(server.requests[before]["messages"])


def notebook_recalls(agent: Agent) -> list[dict[str, Any]]:
    """What bub_nb's next turn sends of the tape, without the phase's anchor message: Bub's context starts after
    the anchor, bub_nb's at it, rendered as Bub words it (docs/bub-interop.md, "Where bub_nb deliberately differs")."""
    recalled = conversation(list(request_preview(agent, NEXT).messages))
    assert recalled[0]["content"].startswith("[Anchor created: ")
    return recalled[1:]


def contents(messages: list[dict[str, Any]]) -> str:
    return "\n".join(str(message.get("content")) for message in messages)


def test_bub_recalls_the_phase_a_memory_save_sits_in_as_the_notebook_does(
    openai_server: OpenAICompatibleServer, agent: Agent, home: Path, workspace: Path
) -> None:
    agent.run("Fact 1: the budget is 400 euros.")
    agent.handoff("phase/plan", summary="The budget is 400 euros.")
    agent.run("Fact 2: the venue is the old library.")
    agent.tape.memory.save_long_term("The class meets on Thursdays.")
    agent.run("Fact 3: the date is the 4th of May.")
    agent.tape.memory.append_daily("Asked about the venue.")
    expected = notebook_recalls(agent)
    recalled = bub_recalls(openai_server, home, workspace)
    assert recalled == expected
    assert "Fact 2" in contents(recalled) and "Fact 3" in contents(recalled)
    assert "Fact 1" not in contents(recalled), "the phase starts at the handoff, for Bub as for the notebook"


def test_bub_recalls_the_notebook_after_a_fork_and_a_reset_as_the_notebook_does(
    openai_server: OpenAICompatibleServer, agent: Agent, home: Path, workspace: Path
) -> None:
    tape = agent.tape
    agent.run("Fact 1: the budget is 400 euros.")
    tape.memory.save_long_term("The class meets on Thursdays.")
    with tape.fork():
        agent.run("Fact 2: the venue is the old library.")
    tape.fork_session("lesson-alternative")
    agent.run("Fact 3: the date is the 4th of May.")
    tape.reset(archive=True)
    agent.run("Fact 4: the speaker is Ada.")
    tape.memory.append_daily("Met Ada.")
    agent.run("Fact 5: lunch is at noon.")
    expected = notebook_recalls(agent)
    recalled = bub_recalls(openai_server, home, workspace)
    assert recalled == expected
    assert "Fact 4" in contents(recalled) and "Fact 5" in contents(recalled)
    assert "Fact 3" not in contents(recalled), "a reset starts the tape over"


# -- Bub's plugins from PyPI, with bub_nb beside them in the Python 3.12 environment -------------------------------

PIPELINE = """
import json
from bub_nb.agent import BuiltinPlugin, TurnPipeline
pipeline = TurnPipeline(BuiltinPlugin)
print(json.dumps({"plugins": pipeline.plugin_names, "refused": pipeline.hooks.refused}))
"""


def test_bubs_plugins_from_pypi_are_each_refused_in_one_line_that_names_why(tmp_path: Path) -> None:
    venv = bub_venv(*PLUGIN_PINS, with_bub_nb=True)
    loaded = bub_python(PIPELINE, home=tmp_path, venv=venv)
    refused = loaded["refused"]
    assert {"schedule", "web-search"} <= set(refused)
    assert "'provide_channels'" in refused["schedule"] and "no channels" in refused["schedule"]
    assert "'onboard_config'" in refused["web-search"] and "no onboarding" in refused["web-search"]
    assert all("\n" not in line for line in refused.values())
    assert not {"schedule", "web-search"} & set(loaded["plugins"])
    assert bub_python(PIPELINE, home=tmp_path, venv=venv, BUB_NB_BUB_PLUGINS="0")["refused"] == {}


MARKED = """
import dataclasses, json
import bub
import bub.hooks.interception as bubs
from bub_nb.agent import Agent, BuiltinPlugin, TurnPipeline
from bub_nb.agent.hooks import interception
from bub_nb.tape import FileTapeStore, Tape

seen = []

class Guard:
    @bub.hookimpl
    def system_prompt(self, prompt, state):
        return "Rules from a plugin marked for Bub."

    @bub.hookimpl
    def before_llm_call(self, request, state):
        seen.append(request.messages[0]["content"])
        return bubs.LlmCallDecision.finish("Answered by Bub's own decision.")

pipeline = TurnPipeline(BuiltinPlugin, entry_points=False)
pipeline.register_plugin(Guard(), name="guard")
agent = Agent(Tape("notebook", FileTapeStore("tapes")), "offline", pipeline=pipeline)
turn = agent.run("Hello")
names = ("LlmCallRequest", "LlmCallResult", "LlmCallDecision", "ToolCall", "ToolCallDecision", "ToolCallResult")
fields = {
    name: [[f.name for f in dataclasses.fields(getattr(module, name))] for module in (interception, bubs)]
    for name in names
}
print(json.dumps({"text": turn.text, "system": seen[0], "fields": fields}))
"""


def test_a_plugin_marked_with_bubs_own_marker_and_answering_with_bubs_own_decision_runs(tmp_path: Path) -> None:
    venv = bub_venv(*PLUGIN_PINS, with_bub_nb=True)
    ran = bub_python(MARKED, home=tmp_path, venv=venv)
    assert ran["text"] == "Answered by Bub's own decision."
    assert ran["system"].endswith("Rules from a plugin marked for Bub.")
    for name, (ours, bubs) in ran["fields"].items():
        assert ours == bubs, f"{name} has other fields than Bub's"


# -- settings shared with Bub ------------------------------------------------------------------------------------


def test_bubs_model_spelling_reaches_the_same_endpoint_from_bub_and_from_the_notebook(
    openai_server: OpenAICompatibleServer, home: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = {
        "BUB_MODEL": "openrouter:bub-nb-test",
        "BUB_OPENROUTER_API_BASE": openai_server.base_url,
        "BUB_OPENROUTER_API_KEY": "test-key",
    }
    done = run_bub(home, "", "-w", str(workspace), "run", "--session-id", SESSION, "Hello from Bub", **shared)
    assert done.returncode == 0, done.stderr[-3000:]
    for name, value in shared.items():
        monkeypatch.setenv(name, value)
    for name in ("BUB_API_BASE", "BUB_API_KEY", "OPENAI_BASE_URL", "BUB_NB_MODEL"):
        monkeypatch.delenv(name, raising=False)
    Agent(Tape(session_tape_name(workspace, SESSION), FileTapeStore(home / "tapes"))).run("Hello from the notebook")
    bub, notebook = openai_server.requests
    assert bub["model"] == notebook["model"] == "bub-nb-test"
    assert bub["messages"][-1]["content"].endswith("Hello from Bub")
    assert notebook["messages"][-1]["content"] == "Hello from the notebook"


def test_bub_run_works_in_the_environment_a_headless_notebook_run_leaves(
    openai_server: OpenAICompatibleServer, home: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``bub-nb run --model offline`` leaves a setting Bub can read: a cell's ``!bub run`` (or Bub run after it in the
    same shell) still starts, rather than failing on a model spelled ``offline``."""
    import nbformat

    from bub_nb.cli import main

    for name in ("BUB_MODEL", "BUB_NB_MODEL", "BUB_HOME", "JPY_SESSION_NAME"):  # what the run sets, put back after
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    source = workspace / "headless.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("%load_ext bub_nb")]), source)
    assert main(["run", str(source), "--home", str(home), "-o", str(workspace / "out.ipynb"), "-m", "offline"]) == 0
    left = {name: value for name, value in os.environ.items() if name == "BUB_MODEL"}
    done = run_bub(home, openai_server.base_url, "-w", str(workspace), "run", "Hello", **left)
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(openai_server.requests) == 1
