"""The agent loop against a real openai client: context from the tape, tools, usage and what a turn writes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bub_nb.agent import Agent, BuiltinPlugin, OpenAIModel, TurnPipeline, hookimpl, resolve_model
from bub_nb.agent.eventloop import run_sync
from bub_nb.context import LAST_ANCHOR, View, build_view
from bub_nb.errors import ModelError
from bub_nb.tape import FileTapeStore, MemoryTapeStore, Tape, TapeEntry
from bub_nb.testing import OpenAICompatibleServer

USAGE = {"prompt_tokens": 120, "completion_tokens": 7, "total_tokens": 127}


class ViewProbe:
    """Notes how far the tape reached each time a view was built, then leaves the view to the default."""

    def __init__(self) -> None:
        self.last_ids: list[int] = []

    @hookimpl
    def build_tape_context(self, tape: Tape, mode: Any) -> None:
        self.last_ids.append(tape.last_id)


def view_at(tape: Tape, last_id: int) -> View:
    """The view of ``tape`` as it stood when its last entry was ``last_id``, rebuilt on a copy."""
    copy = Tape("copy", MemoryTapeStore())
    copy.extend(tape.read(1, last_id + 1))
    return build_view(copy, LAST_ANCHOR)


def system_at(tape: Tape, last_id: int) -> dict[str, Any]:
    system = [entry for entry in tape.read(1, last_id + 1) if entry.kind == "system"][-1]
    return {"role": "system", "content": system.payload["content"]}


def as_json(value: Any) -> Any:
    return json.loads(json.dumps(value))


def assert_requests_are_views_of_the_tape(server: OpenAICompatibleServer, tape: Tape, probe: ViewProbe) -> None:
    requests = server.requests
    assert len(requests) == len(probe.last_ids) > 0
    for request, last_id in zip(requests, probe.last_ids, strict=True):
        expected = [system_at(tape, last_id), *view_at(tape, last_id).messages]
        assert request["messages"] == as_json(expected)


@pytest.fixture
def probe() -> ViewProbe:
    return ViewProbe()


@pytest.fixture
def pipeline(probe: ViewProbe) -> TurnPipeline:
    pipeline = TurnPipeline(BuiltinPlugin, entry_points=False)
    pipeline.register_plugin(probe)
    return pipeline


def kinds(entries: Any) -> list[str]:
    return [entry.kind for entry in entries]


@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
def test_every_request_is_the_system_prompt_and_the_view_rebuilt_from_the_tape(
    openai_server: OpenAICompatibleServer, tape: Tape, model: OpenAIModel, probe: ViewProbe, pipeline: TurnPipeline,
    stream: bool,
) -> None:  # fmt: skip
    agent = Agent(tape, model, pipeline=pipeline)
    openai_server.reply("First answer.")
    agent.run("Hello there", stream=stream)
    openai_server.reply_tool_calls([{"name": "tape_info", "arguments": {}}])
    openai_server.reply_tool_calls([{"name": "memory_save", "arguments": {"content": "likes tea"}}])
    openai_server.reply("Second answer.")
    turn = agent.run("Look at the tape, then remember that I like tea", stream=stream)

    assert turn.status == "ok" and turn.text == "Second answer."
    assert len(openai_server.requests) == 4
    assert_requests_are_views_of_the_tape(openai_server, tape, probe)
    # The memory saved in step 2 is a fact on the tape; it is not a message, so the view stays a conversation.
    last = openai_server.last_request["messages"]
    assert [m["role"] for m in last] == ["system", "assistant", "user", "assistant", "user", "assistant", "tool",
                                         "assistant", "tool"]  # fmt: skip
    assert as_json(list(agent.view().messages)) == as_json(list(tape.view().messages))


def test_a_turn_writes_system_prompt_tool_pairs_answer_and_run_event_in_order(
    openai_server: OpenAICompatibleServer, tape: Tape, model: OpenAIModel
) -> None:
    openai_server.reply_tool_calls([{"name": "tape_anchors", "arguments": {}}], usage=USAGE)
    openai_server.reply("Done.", usage=USAGE)
    turn = Agent(tape, model, meta={"cell": 3}).run("List the anchors")

    assert kinds(turn.entries) == ["system", "message", "tool_call", "tool_result", "message", "event"]
    assert turn.entries == tuple(tape.read(turn.entries[0].id))
    system, user, call, result, answer, run = turn.entries
    assert system.payload["content"] == openai_server.requests[0]["messages"][0]["content"]
    assert user.payload == {"role": "user", "content": "List the anchors"}
    assert call.payload["calls"][0]["function"]["name"] == "tape_anchors"
    assert result.payload["results"][0].startswith("- session/start")
    assert answer.payload == {"role": "assistant", "content": "Done."}
    assert run.payload["name"] == "run"
    assert run.payload["data"]["status"] == "ok" and run.payload["data"]["model"] == "openai:test-model"
    assert run.payload["data"]["usage"] == {"prompt_tokens": 240, "completion_tokens": 14, "total_tokens": 254}
    assert run.payload["data"]["elapsed_ms"] >= 0 and run.payload["data"]["steps"] == 2
    assert {entry.meta["run_id"] for entry in turn.entries} == {turn.run_id}
    assert all(entry.meta["cell"] == 3 for entry in turn.entries)
    assert turn.usage is not None and turn.usage.total_tokens == 254


def test_tools_run_until_the_model_answers(
    openai_server: OpenAICompatibleServer, tape: Tape, model: OpenAIModel
) -> None:
    calls: list[tuple[int, int]] = []

    def add(a: int, b: int) -> int:
        """Add two numbers."""
        calls.append((a, b))
        return a + b

    openai_server.reply_tool_calls([{"name": "add", "arguments": {"a": 2, "b": 3}}])
    openai_server.reply_tool_calls([{"name": "add", "arguments": {"a": 5, "b": 4}}])
    openai_server.reply("2 + 3 + 4 = 9")
    turn = Agent(tape, model, tools=[add], builtin_tools=False).run("Add 2, 3 and 4")

    assert calls == [(2, 3), (5, 4)] and turn.text == "2 + 3 + 4 = 9" and turn.steps == 3
    results = [entry.payload["results"] for entry in turn.entries if entry.kind == "tool_result"]
    assert results == [["5"], ["9"]]
    assert openai_server.requests[0]["tools"][0]["function"]["name"] == "add"
    assert openai_server.last_request["messages"][-1]["content"] == "9"


def test_max_steps_ends_the_turn_with_a_clear_message(
    openai_server: OpenAICompatibleServer, tape: Tape, model: OpenAIModel
) -> None:
    for _ in range(3):
        openai_server.reply_tool_calls([{"name": "tape_info", "arguments": {}}])
    turn = Agent(tape, model, max_steps=2).run("Keep looking")

    assert len(openai_server.requests) == 2 and openai_server.pending == 1
    assert turn.status == "max_steps" and "max_steps=2" in turn.text and turn.error == turn.text
    assert kinds(turn.entries) == ["system", "message", "tool_call", "tool_result", "tool_call", "tool_result",
                                   "error", "event"]  # fmt: skip
    error, run = turn.entries[-2:]
    assert error.payload["kind"] == "max_steps" and error.payload["message"] == turn.text
    assert run.payload["data"]["status"] == "max_steps" and run.payload["data"]["steps"] == 2


def test_arguments_that_do_not_fit_the_schema_go_back_to_the_model_and_the_tool_does_not_run(
    openai_server: OpenAICompatibleServer, tape: Tape, model: OpenAIModel
) -> None:
    calls: list[int] = []

    def square(n: int) -> int:
        """Square a number."""
        calls.append(n)
        return n * n

    openai_server.reply_tool_calls([{"name": "square", "arguments": {"n": "four"}}])
    openai_server.reply("Sorry, I need a number.")
    turn = Agent(tape, model, tools=[square]).run("Square four")

    assert calls == [] and turn.status == "ok" and turn.text == "Sorry, I need a number."
    sent = json.loads(openai_server.last_request["messages"][-1]["content"])
    assert sent["kind"] == "invalid_input" and "'four' is not of type 'integer'" in sent["message"]
    assert kinds(turn.entries) == ["system", "message", "tool_call", "tool_result", "error", "message", "event"]
    error = turn.entries[4]
    assert error.payload["kind"] == "tool.invalid_input"
    assert error.payload["details"] == {"tool": "square", "call_id": turn.entries[2].payload["calls"][0]["id"]}


def test_a_tool_exception_goes_back_to_the_model_as_an_error_result(
    openai_server: OpenAICompatibleServer, tape: Tape, model: OpenAIModel
) -> None:
    def divide(a: float, b: float) -> float:
        """Divide a by b."""
        return a / b

    openai_server.reply_tool_calls([{"name": "divide", "arguments": {"a": 1, "b": 0}}])
    openai_server.reply("Division by zero is undefined.")
    turn = Agent(tape, model, tools=[divide]).run("What is 1/0?")

    sent = json.loads(openai_server.last_request["messages"][-1]["content"])
    assert sent == {"kind": "tool", "message": "Tool 'divide' failed: ZeroDivisionError: division by zero"}
    assert turn.status == "ok" and turn.entries[3].payload["results"] == [sent]
    assert turn.entries[4].kind == "error" and turn.entries[4].payload["kind"] == "tool.tool"


def test_an_unknown_tool_and_malformed_arguments_go_back_as_errors_and_the_loop_continues(
    openai_server: OpenAICompatibleServer, tape: Tape, model: OpenAIModel
) -> None:
    openai_server.reply_tool_calls(
        [{"name": "shell_exec", "arguments": {"cmd": "ls"}}, {"name": "tape_search", "arguments": '{"query": '}]
    )
    openai_server.reply("I cannot run shell commands.")
    turn = Agent(tape, model).run("List the files")

    assert turn.status == "ok" and turn.text == "I cannot run shell commands."
    unknown, malformed = (json.loads(m["content"]) for m in openai_server.last_request["messages"][-2:])
    assert unknown["kind"] == "not_found" and "'shell_exec'" in unknown["message"]
    assert malformed["kind"] == "invalid_input" and "not JSON" in malformed["message"]
    assert kinds(turn.entries) == ["system", "message", "tool_call", "tool_result", "error", "error", "message",
                                   "event"]  # fmt: skip
    assert [e.payload["kind"] for e in turn.entries[4:6]] == ["tool.not_found", "tool.invalid_input"]


def test_a_streamed_turn_asks_for_usage_and_records_it(
    openai_server: OpenAICompatibleServer, tape: Tape, model: OpenAIModel
) -> None:
    openai_server.reply("Streamed words arrive one by one.", usage=USAGE)
    agent = Agent(tape, model)
    deltas = list(agent.stream("Stream something"))

    assert "".join(deltas) == "Streamed words arrive one by one." and len(deltas) == 6
    request = openai_server.last_request
    assert request["stream"] is True and request["stream_options"] == {"include_usage": True}
    turn = agent.last_turn
    assert turn is not None and turn.usage is not None and turn.usage.as_dict() == USAGE
    assert turn.entries[-1].payload["data"]["usage"] == USAGE


def test_a_non_streamed_turn_records_the_usage_the_endpoint_reported(
    openai_server: OpenAICompatibleServer, tape: Tape, model: OpenAIModel
) -> None:
    openai_server.reply("Plain.", usage=USAGE)
    turn = Agent(tape, model).run("Answer plainly")

    assert "stream" not in openai_server.last_request
    assert turn.usage is not None and turn.usage.as_dict() == USAGE
    assert tape.info().last_usage == USAGE


def test_comma_commands_never_reach_the_model_and_are_logged(
    openai_server: OpenAICompatibleServer, tape: Tape, model: OpenAIModel
) -> None:
    agent = Agent(tape, model)
    turn = agent.run(",tape.info")
    streamed = list(agent.stream(",anchors"))

    assert openai_server.requests == []
    assert turn.status == "command" and "session/start" in turn.text
    assert streamed == [agent.last_turn.text] and "session/start" in streamed[0]  # type: ignore[union-attr]
    commands = [e.payload["data"] for e in tape.read() if e.kind == "event" and e.payload["name"] == "command"]
    assert [c["name"] for c in commands] == ["tape.info", "tape.anchors"]
    assert all(c["status"] == "ok" for c in commands)
    assert turn.entries[-1].payload["name"] == "command"


def test_the_api_key_is_never_written_to_the_tape(
    openai_server: OpenAICompatibleServer, tape: Tape, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    key = "sk-proj-" + "Zq7" * 12
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.setenv("BUB_API_BASE", openai_server.base_url)
    model = resolve_model("openai:test-model", timeout=60, max_retries=0)
    agent = Agent(tape, model)
    request.addfinalizer(lambda: run_sync(model.aclose()))  # type: ignore[attr-defined]
    openai_server.reply_tool_calls([{"name": "memory_save", "arguments": {"content": f"my key is {key}"}}])
    openai_server.reply(f"Noted your key {key}.")
    agent.run(f"Remember my key {key}")
    openai_server.fail(401, f"Incorrect API key provided: {key}")
    with pytest.raises(ModelError):
        agent.run("Try again")
    openai_server.drop_after(2, f"Your key is {key} and more")
    with pytest.raises(ModelError):
        agent.run("Stream it", stream=True)

    assert tape.path is not None
    written = b"".join(path.read_bytes() for path in tape.path.parent.iterdir() if path.is_file())
    assert key.encode() not in written
    assert b"Incorrect API key provided" in written  # the failure itself is recorded
    # The view is rebuilt from the redacted tape, so the model never saw the key either.
    assert "[redacted]" in str(openai_server.requests[0]) and key not in str(openai_server.requests)


def test_a_prompt_that_is_only_whitespace_is_refused_before_anything_is_written(tape: Tape) -> None:
    agent = Agent(tape, "offline")
    with pytest.raises(Exception, match="empty"):
        agent.run("   ")
    assert tape.last_id == 0


def test_the_offline_model_saves_memory_through_the_tool_path(tape: Tape) -> None:
    agent = Agent(tape, "offline")
    turn = agent.run("remember: the user prefers metric units")

    assert turn.status == "ok" and "memory_save returned" in turn.text
    assert tape.memory.read().long_term == "the user prefers metric units"
    assert kinds(turn.entries) == ["system", "message", "event", "event", "event", "tool_call", "tool_result",
                                   "message", "event"]  # fmt: skip
    next_turn = agent.run("What do you know?")
    assert "the user prefers metric units" in next_turn.entries[0].payload["content"]
    assert "has a `<memory>` block" in next_turn.text


def test_the_offline_model_hands_off_through_the_tool_path(tape: Tape) -> None:
    agent = Agent(tape, "offline")
    turn = agent.run("handoff lesson/1: tape basics covered")

    anchor = tape.find_anchor("lesson/1")
    assert anchor.state == {"summary": "tape basics covered"}
    assert anchor.id in turn.entry_ids and "tape_handoff returned" in turn.text
    assert agent.view().messages[0]["content"].startswith("[Anchor created: lesson/1]")
    assert "The view starts at anchor `lesson/1`" in agent.run("Where are we?").text


def test_entries_a_tool_writes_are_part_of_the_turn(tape: Tape) -> None:
    def note(text: str) -> str:
        """Write a note on the tape."""
        tape.append(TapeEntry.event("note", {"text": text}))
        return "noted"

    from bub_nb.agent import ScriptedModel

    model = ScriptedModel([{"tool_calls": [{"name": "note", "arguments": {"text": "hi"}}]}, "ok"])
    turn = Agent(tape, model, tools=[note]).run("Note hi")
    assert kinds(turn.entries) == ["system", "message", "event", "tool_call", "tool_result", "message", "event"]
    assert turn.entries == tuple(tape.read(turn.entries[0].id))


def test_memory_saved_through_another_handle_on_the_tape_reaches_the_next_system_prompt(
    tmp_path: Path, openai_server: OpenAICompatibleServer, tape: Tape, model: OpenAIModel
) -> None:
    agent = Agent(tape, model)
    agent.run("Hello")
    assert "<memory>" not in openai_server.last_request["messages"][0]["content"]

    other = Tape(tape.name, FileTapeStore(tmp_path / "tapes"))  # another kernel on the same file, say
    other.memory.save_long_term("The user writes SQL for DuckDB.")
    agent.run("Hello again")
    assert "The user writes SQL for DuckDB." in openai_server.last_request["messages"][0]["content"]


def test_run_works_inside_a_running_event_loop_as_in_jupyter(
    openai_server: OpenAICompatibleServer, tmp_path: Path
) -> None:
    # A fresh interpreter: running inside a loop applies nest-asyncio2, which patches every loop after it.
    script = f"""
import asyncio
from bub_nb.agent import Agent, OpenAIModel
from bub_nb.tape import FileTapeStore, Tape

model = OpenAIModel("test-model", base_url={openai_server.base_url!r}, api_key="test", timeout=60, max_retries=0)
agent = Agent(Tape("notebook", FileTapeStore({str(tmp_path)!r})), model)

async def cell():
    return agent.run("Hi").text  # a notebook cell calls the sync API while the kernel's loop runs

print(asyncio.run(cell()))
print("".join(agent.stream("Again")))
"""
    openai_server.reply("From inside the loop.").reply("And outside it.")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["From inside the loop.", "And outside it."]
    assert done.stderr == ""


def test_previewing_the_system_prompt_writes_nothing_and_follows_the_memory_zone(tape: Tape) -> None:
    agent = Agent(tape, "offline", instructions="Answer briefly.")
    preview = agent.system_prompt()
    assert tape.last_id == 0
    assert preview.startswith("You are Bub") and "Answer briefly." in preview and "<memory>" not in preview

    tape.memory.save_long_term("The user likes tea.")
    assert "The user likes tea." in agent.system_prompt()
    turn = agent.run("Hello")
    assert turn.entries[0].payload["content"] == agent.system_prompt()
