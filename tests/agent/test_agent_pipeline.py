"""The agent inside the turn pipeline: plugins shape the view, envelopes run whole turns, handoffs cut history."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bub_nb.agent import Agent, BuiltinPlugin, Envelope, OpenAIModel, StreamEvent, TurnPipeline, hookimpl
from bub_nb.agent.eventloop import run_sync
from bub_nb.context import Selection, window
from bub_nb.tape import Tape
from bub_nb.testing import OpenAICompatibleServer


@pytest.fixture
def pipeline() -> TurnPipeline:
    return TurnPipeline(BuiltinPlugin, entry_points=False)


class UserMessagesOnly:
    """A context strategy: only what the user said, wherever the anchors are."""

    label = "user-only"

    def select(self, tape: Tape) -> Selection:
        return Selection(tuple(e for e in tape.read(kinds=("message",)) if e.payload.get("role") == "user"))


class Strategy:
    """A plugin that answers ``build_tape_context`` with a strategy of its own."""

    def __init__(self, strategy: Any) -> None:
        self.strategy = strategy

    @hookimpl
    def build_tape_context(self, tape: Tape, mode: Any) -> Any:
        return self.strategy


def test_a_plugin_strategy_changes_what_the_model_receives(
    openai_server: OpenAICompatibleServer, tape: Tape, model: OpenAIModel, pipeline: TurnPipeline
) -> None:
    agent = Agent(tape, model, pipeline=pipeline)
    agent.run("First question")
    tape.handoff("phase/2", {"summary": "first question answered"})
    pipeline.register_plugin(Strategy(UserMessagesOnly()))
    agent.run("Second question")

    assert openai_server.last_request["messages"][1:] == [
        {"role": "user", "content": "First question"},
        {"role": "user", "content": "Second question"},
    ]
    pipeline.register_plugin(Strategy(window(1)))
    agent.run("Third question")
    assert openai_server.last_request["messages"][1:] == [{"role": "user", "content": "Third question"}]


def test_a_plugin_adds_to_the_system_prompt(
    openai_server: OpenAICompatibleServer, tape: Tape, model: OpenAIModel, pipeline: TurnPipeline
) -> None:
    class CourseRules:
        @hookimpl
        def system_prompt(self, prompt: Any, state: dict[str, Any]) -> str:
            return "Answer in one sentence."

    pipeline.register_plugin(CourseRules())
    turn = Agent(tape, model, pipeline=pipeline, instructions="Be kind.").run("Hi")

    system = openai_server.last_request["messages"][0]["content"]
    assert system.startswith("You are Bub") and system.endswith("Be kind.\n\nAnswer in one sentence.")
    assert turn.entries[0].payload["content"] == system


@pytest.mark.parametrize("streaming", [False, True], ids=["run_model", "run_model_stream"])
def test_process_inbound_runs_a_whole_turn_through_the_builtin_plugin(
    openai_server: OpenAICompatibleServer, tape: Tape, model: OpenAIModel, pipeline: TurnPipeline, streaming: bool
) -> None:
    agent = Agent(tape, model, pipeline=pipeline)
    events: list[StreamEvent] = []
    openai_server.reply("Hello from the pipeline.")
    envelope = Envelope("notebook", "lesson.ipynb", "Say hello", meta={"tape": tape, "agent": agent})
    result = pipeline.process_inbound_sync(envelope, on_event=events.append if streaming else None)

    assert result.session_id == "notebook:lesson.ipynb"
    assert result.model_output == "Hello from the pipeline."
    assert result.outbounds[0].content == "Hello from the pipeline."  # type: ignore[union-attr]
    turn = result.state["turn"]
    assert turn is agent.last_turn and turn.status == "ok"
    assert [e.kind for e in turn.entries] == ["system", "message", "message", "event"]
    assert openai_server.last_request.get("stream", False) is streaming
    assert openai_server.last_request["messages"][-1] == {"role": "user", "content": "Say hello"}
    if streaming:
        assert "".join(e.data["delta"] for e in events if e.kind == "text") == "Hello from the pipeline."


def test_process_inbound_without_an_agent_runs_the_configured_model_on_the_given_tape(
    openai_server: OpenAICompatibleServer, tape: Tape, pipeline: TurnPipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BUB_MODEL", "openai:test-model")
    monkeypatch.setenv("BUB_API_BASE", openai_server.base_url)
    openai_server.reply("Made my own agent.")
    result = pipeline.process_inbound_sync(Envelope("notebook", "nb", "Hi", meta={"tape": tape}))
    run_sync(result.state["agent"].model.aclose())

    assert result.model_output == "Made my own agent."
    assert result.state["agent"].tape is tape and result.state["turn"].model == "openai:test-model"
    assert tape.read()[-1].payload["data"]["status"] == "ok"


def test_a_failing_turn_in_the_pipeline_still_leaves_its_record(
    openai_server: OpenAICompatibleServer, tape: Tape, model: OpenAIModel, pipeline: TurnPipeline
) -> None:
    agent = Agent(tape, model, pipeline=pipeline)
    openai_server.fail(500)
    state_seen: list[dict[str, Any]] = []

    class SaveState:
        @hookimpl
        def save_state(self, state: dict[str, Any]) -> None:
            state_seen.append(dict(state))

    pipeline.register_plugin(SaveState())
    with pytest.raises(Exception, match="answered 500"):
        pipeline.process_inbound_sync(Envelope("notebook", "nb", "Hi", meta={"tape": tape, "agent": agent}))
    assert state_seen[0]["turn"].status == "error"
    assert tape.read()[-1].payload["data"]["status"] == "error"


def test_a_tool_handoff_sends_the_model_the_anchor_state_and_none_of_the_earlier_history(
    openai_server: OpenAICompatibleServer, tape: Tape, model: OpenAIModel
) -> None:
    agent = Agent(tape, model)
    openai_server.reply("The schema has three tables.")
    agent.run("Describe the schema")
    handoff = {"name": "phase/queries", "summary": "schema described", "next_steps": "write the queries"}
    openai_server.reply_tool_calls([{"name": "tape_handoff", "arguments": handoff}])
    openai_server.reply("Handed off; ready for the queries.")
    turn = agent.run("We are done with the schema; hand off")

    after = openai_server.last_request["messages"]
    state = {"summary": "schema described", "next_steps": "write the queries"}
    assert after[1] == {"role": "assistant", "content": f"[Anchor created: phase/queries]: {json.dumps(state)}"}
    assert [m["role"] for m in after] == ["system", "assistant", "assistant", "tool"]
    assert after[2]["tool_calls"][0]["function"]["name"] == "tape_handoff"
    assert after[3]["content"].startswith("anchor added: phase/queries")
    earlier = json.dumps(after)
    assert "Describe the schema" not in earlier and "three tables" not in earlier and "hand off" not in earlier
    anchor = tape.find_anchor("phase/queries")
    assert anchor.state == state and anchor.id in turn.entry_ids and turn.status == "ok"
    kinds = [e.kind for e in turn.entries]
    assert kinds == ["system", "message", "anchor", "event", "tool_call", "tool_result", "message", "event"]

    openai_server.reply("Query one: ...")
    agent.run("Write the first query")
    roles = [m["role"] for m in openai_server.last_request["messages"]]
    assert roles == ["system", "assistant", "assistant", "tool", "assistant", "user"]
