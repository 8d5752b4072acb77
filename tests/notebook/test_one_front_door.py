"""Every turn comes in through one front door: a plugin's stage hooks fire the same for ``%%bub`` and ``Agent.run``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from harness.shell import Notebook

from bub_nb import Agent, Tape, register_plugin, unregister_plugin
from bub_nb.agent import hookimpl


class StageLog:
    """A plugin that notes every stage of a turn it sees, and what ``save_state`` was given."""

    def __init__(self) -> None:
        self.stages: list[str] = []
        self.saved: list[tuple[str, str]] = []

    @hookimpl
    def resolve_session(self, message: Any) -> None:
        self.stages.append("resolve_session")

    @hookimpl
    def load_state(self, message: Any, session_id: str) -> dict[str, Any]:
        self.stages.append("load_state")
        return {"seen_by_stage_log": True}

    @hookimpl
    def build_prompt(self, message: Any, session_id: str, state: dict[str, Any]) -> None:
        self.stages.append("build_prompt")

    @hookimpl
    def system_prompt(self, prompt: Any, state: dict[str, Any]) -> str:
        self.stages.append("system_prompt")
        return "Answer briefly."

    @hookimpl
    def save_state(self, session_id: str, state: dict[str, Any], model_output: str) -> None:
        self.stages.append("save_state")
        self.saved.append((state["tape"].name, model_output))

    @hookimpl
    def render_outbound(self, message: Any, session_id: str, state: dict[str, Any], model_output: str) -> None:
        self.stages.append("render_outbound")

    @hookimpl
    def dispatch_outbound(self, message: Any) -> None:
        self.stages.append("dispatch_outbound")


@pytest.fixture
def stage_log() -> Iterator[StageLog]:
    plugin = StageLog()
    register_plugin(plugin, name="stage-log")
    yield plugin
    unregister_plugin("stage-log")


def test_a_plugins_stage_hooks_fire_the_same_for_a_cell_and_for_agent_run(nb: Notebook, stage_log: StageLog) -> None:
    nb.run("%%bub\nWhat does an anchor keep?")
    from_the_cell = list(stage_log.stages)
    cell_turn = nb.magics.session.last_turn
    stage_log.stages.clear()

    agent = Agent(Tape("from-python", nb.tape.base_store), model="offline")
    python_turn = agent.run("What does an anchor keep?")

    assert stage_log.stages == from_the_cell
    assert from_the_cell[:3] == ["resolve_session", "load_state", "build_prompt"]
    assert from_the_cell[-3:] == ["save_state", "render_outbound", "dispatch_outbound"]
    assert "system_prompt" in from_the_cell  # asked while the model stage ran
    assert stage_log.saved == [(nb.tape.name, cell_turn.text), ("from-python", python_turn.text)]
    assert all(turn.entries[0].payload["content"].endswith("Answer briefly.") for turn in (cell_turn, python_turn))


def test_a_streamed_agent_turn_passes_every_stage_and_saves_what_streamed(nb: Notebook, stage_log: StageLog) -> None:
    agent = Agent(Tape("streamed", nb.tape.base_store), model="offline")
    streamed = "".join(agent.stream("Tell me about forks"))

    assert stage_log.stages[0] == "resolve_session" and stage_log.stages[-1] == "dispatch_outbound"
    assert stage_log.saved == [("streamed", streamed)]
    assert agent.last_turn is not None and agent.last_turn.text == streamed
