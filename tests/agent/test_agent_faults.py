"""Faults and interrupts: a turn always leaves the prompt, what went wrong and how it ended on the tape."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bub_nb.agent import Agent, OpenAIModel
from bub_nb.agent.eventloop import run_sync
from bub_nb.errors import ContextLengthError, ModelError
from bub_nb.tape import FileTapeStore, Tape
from bub_nb.testing import OpenAICompatibleServer

LONG_STORY = " ".join(f"word{number}" for number in range(40))


@pytest.fixture
def tape(tmp_path: Path) -> Tape:
    return Tape("notebook", FileTapeStore(tmp_path / "tapes"))


@pytest.fixture
def endpoint(openai_server: OpenAICompatibleServer) -> Iterator[Callable[..., OpenAIModel]]:
    """Models on the test endpoint; closed after the test, as sync turns share a loop that outlives it."""
    made: list[OpenAIModel] = []

    def make(*, timeout: float = 60.0, max_retries: int = 0) -> OpenAIModel:
        model = OpenAIModel(
            "test-model", base_url=openai_server.base_url, api_key="test", timeout=timeout, max_retries=max_retries
        )
        made.append(model)
        return model

    yield make
    for model in made:
        run_sync(model.aclose())


def kinds(entries: Any) -> list[str]:
    return [entry.kind for entry in entries]


def assert_failed_turn_on_tape(tape: Tape, prompt: str, kind: str, *, partial: str | None = None) -> None:
    """The turn's prompt, an ``error`` of ``kind``, the partial answer if any, and ``run`` with status error."""
    system = max(entry.id for entry in tape.read() if entry.kind == "system")
    entries = tape.read(system)
    expected = (
        ["system", "message", "error", "message", "event"] if partial else ["system", "message", "error", "event"]
    )
    assert kinds(entries) == expected
    assert entries[1].payload == {"role": "user", "content": prompt}
    assert entries[2].payload["kind"] == kind
    if partial:
        assert entries[3].payload == {"role": "assistant", "content": partial} and entries[3].meta["partial"] is True
    run = entries[-1].payload
    assert run["name"] == "run" and run["data"]["status"] == "error"


# -- the endpoint fails --------------------------------------------------------------------------


@pytest.mark.parametrize("status", [500, 429])
def test_the_client_retries_server_errors_and_rate_limits(
    openai_server: OpenAICompatibleServer, tape: Tape, endpoint: Callable[..., OpenAIModel], status: int
) -> None:
    openai_server.fail(status).fail(status).reply("Third time lucky.")
    turn = Agent(tape, endpoint(max_retries=2)).run("Hello")

    assert turn.status == "ok" and turn.text == "Third time lucky."
    assert len(openai_server.requests) == 3
    assert kinds(turn.entries) == ["system", "message", "message", "event"]


@pytest.mark.parametrize("status", [500, 429])
def test_when_retries_run_out_the_turn_ends_with_an_error_on_the_tape(
    openai_server: OpenAICompatibleServer, tape: Tape, endpoint: Callable[..., OpenAIModel], status: int
) -> None:
    openai_server.fail(status).fail(status)
    with pytest.raises(ModelError, match=f"answered {status}") as caught:
        Agent(tape, endpoint(max_retries=1)).run("Hello")

    assert len(openai_server.requests) == 2
    assert_failed_turn_on_tape(tape, "Hello", "model_error")
    assert caught.value.turn.status == "error"  # type: ignore[attr-defined]


def test_no_lost_prompts_a_500_loses_no_prompt(
    openai_server: OpenAICompatibleServer, tape: Tape, endpoint: Callable[..., OpenAIModel]
) -> None:
    agent = Agent(tape, endpoint())
    openai_server.fail(500)
    with pytest.raises(ModelError):
        agent.run("Summarize chapter 3")
    assert_failed_turn_on_tape(tape, "Summarize chapter 3", "model_error")

    openai_server.reply("Chapter 3 is about anchors.")
    assert agent.run("Did you get my question?").ok
    users = [m["content"] for m in openai_server.last_request["messages"] if m["role"] == "user"]
    assert users == ["Summarize chapter 3", "Did you get my question?"]


def test_a_timeout_ends_the_turn_with_an_error(
    openai_server: OpenAICompatibleServer, tape: Tape, endpoint: Callable[..., OpenAIModel]
) -> None:
    openai_server.delay(600)  # no answer within the test: only the model's timeout ends the turn
    with pytest.raises(ModelError, match="timed out"):
        Agent(tape, endpoint(timeout=0.2)).run("Are you there?")

    assert_failed_turn_on_tape(tape, "Are you there?", "model_error")


def test_a_connection_dropped_mid_stream_keeps_the_partial_answer(
    openai_server: OpenAICompatibleServer, tape: Tape, endpoint: Callable[..., OpenAIModel]
) -> None:
    openai_server.drop_after(3, "one two three four five")
    seen: list[str] = []
    with pytest.raises(ModelError, match="dropped mid-stream"):
        Agent(tape, endpoint()).run("Count", on_delta=seen.append)

    assert seen == ["one ", "two ", "three "]
    assert_failed_turn_on_tape(tape, "Count", "model_error", partial="one two three ")


# -- context overflow ----------------------------------------------------------------------------


def test_overflow_recovery_a_context_overflow_from_the_server_produces_the_auto_handoff_anchor_and_a_successful_retry(
    openai_server: OpenAICompatibleServer, tape: Tape, endpoint: Callable[..., OpenAIModel]
) -> None:
    agent = Agent(tape, endpoint())
    for number in range(6):
        agent.run(f"Part {number}: " + "a long paragraph about tapes " * 60)
    openai_server.context_window = 1500  # the history no longer fits; one prompt after an anchor does
    # Cites the first part, which it saw, for what that part says.
    openai_server.default_text = "Summary:\nPart 0 was a long paragraph about tapes [#6]."
    before = len(openai_server.requests)
    turn = agent.run("What next?")

    assert turn.status == "ok"
    expected = ["system", "message", "event", "anchor", "event", "event", "message", "message", "event"]
    assert kinds(turn.entries) == expected
    _, _, summary, anchor, handoff, step, retry, _, _ = turn.entries
    assert summary.payload["name"] == "summary" and summary.payload["data"]["parts"] > 1  # too long for one request
    assert anchor.payload["name"] == "auto_handoff/context_overflow"
    assert anchor.payload["state"]["reason"] == "context_length_exceeded"
    assert anchor.payload["state"]["summary"]
    assert "maximum context length is 1500 tokens" in anchor.payload["state"]["error"]
    assert handoff.payload["name"] == "handoff"
    assert step.payload["name"] == "loop.step" and step.payload["data"]["status"] == "auto_handoff"
    assert retry.payload == {"role": "user", "content": "What next?"} and retry.meta["retry"] is True
    requests = openai_server.requests[before:]
    refused, retried = requests[0], requests[-1]
    assert len(refused["messages"]) == 15  # system, the session/start anchor, six exchanges and the prompt
    assert [m["role"] for m in retried["messages"]] == ["system", "assistant", "user"]
    assert retried["messages"][1]["content"].startswith("[Anchor created: auto_handoff/context_overflow]")
    assert retried["messages"][2]["content"] == "What next?"


def test_a_second_overflow_in_the_same_turn_is_an_error_with_everything_on_the_tape(
    openai_server: OpenAICompatibleServer, tape: Tape, endpoint: Callable[..., OpenAIModel]
) -> None:
    openai_server.fail_context_length(limit=5000).reply("Summary:\nToo much was asked [#2].")
    openai_server.fail_context_length(limit=5000)
    with pytest.raises(ContextLengthError, match="maximum context length is 5000 tokens") as caught:
        Agent(tape, endpoint()).run("Too much")

    turn = caught.value.turn  # type: ignore[attr-defined]
    assert turn.status == "error" and len(openai_server.requests) == 3  # the turn, the summary, the retry
    expected = ["system", "message", "event", "anchor", "event", "event", "message", "error", "event"]
    assert kinds(turn.entries) == expected
    assert turn.entries[3].payload["name"] == "auto_handoff/context_overflow"
    assert turn.entries[7].payload["kind"] == "context_length_exceeded"
    assert turn.entries[-1].payload["data"]["status"] == "error"
    assert turn.entries == tuple(tape.read(turn.entries[0].id))


# -- interrupts ----------------------------------------------------------------------------------


def assert_interrupted(tape: Tape, partial: str) -> None:
    system = max(entry.id for entry in tape.read() if entry.kind == "system")
    entries = tape.read(system)
    assert kinds(entries) == ["system", "message", "message", "error", "event"]  # the answer, then the error
    assert entries[3].payload["kind"] == "interrupted"
    assert entries[2].payload == {"role": "assistant", "content": partial} and entries[2].meta["partial"] is True
    assert entries[4].payload["data"]["status"] == "interrupted"


def test_a_keyboard_interrupt_from_on_delta_keeps_the_partial_answer(
    openai_server: OpenAICompatibleServer, tape: Tape, endpoint: Callable[..., OpenAIModel]
) -> None:
    openai_server.reply(LONG_STORY, chunk_delay=0.01)
    agent = Agent(tape, endpoint())
    seen: list[str] = []

    def display(delta: str) -> None:
        seen.append(delta)
        if len(seen) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        agent.run("Tell me a story", on_delta=display)

    assert_interrupted(tape, "".join(seen))
    assert agent.last_turn is not None and agent.last_turn.status == "interrupted"
    last = tape.last_id
    assert openai_server.wait_for_open_connections(0, timeout=60)  # the stream is closed: the rest arrives nowhere
    assert tape.last_id == last and agent.abort() is None


def test_abort_during_a_stream_returns_the_interrupted_turn_and_writes_nothing_after(
    openai_server: OpenAICompatibleServer, tape: Tape, endpoint: Callable[..., OpenAIModel]
) -> None:
    async def scenario() -> None:
        openai_server.reply(LONG_STORY, chunk_delay=0.02)
        agent = Agent(tape, endpoint())
        seen: list[str] = []
        task = asyncio.create_task(agent.arun("Tell me a story", on_delta=seen.append))
        while len(seen) < 3:
            await asyncio.sleep(0.005)
        aborted = agent.abort()
        turn = await task

        assert aborted is turn and turn.status == "interrupted" and turn.text == "".join(seen[: len(turn.text)])
        assert_interrupted(tape, turn.text)
        last = tape.last_id
        assert await asyncio.to_thread(openai_server.wait_for_open_connections, 0, 60)  # the stream is closed
        assert tape.last_id == last

    asyncio.run(scenario())


def test_abort_while_waiting_for_the_model_stops_the_wait(
    openai_server: OpenAICompatibleServer, tape: Tape, endpoint: Callable[..., OpenAIModel]
) -> None:
    async def scenario() -> None:
        openai_server.delay(600, "too late")  # no reply within the test: only the abort can end the wait
        agent = Agent(tape, endpoint())
        task = asyncio.create_task(agent.arun("Think hard"))
        while not openai_server.requests:  # the turn is waiting for the model
            await asyncio.sleep(0.01)
        agent.abort()
        turn = await task

        assert turn.status == "interrupted" and turn.text == ""
        assert kinds(turn.entries) == ["system", "message", "error", "event"]

    asyncio.run(scenario())


def test_cancelling_an_arun_task_records_the_interrupt(
    openai_server: OpenAICompatibleServer, tape: Tape, endpoint: Callable[..., OpenAIModel]
) -> None:
    async def scenario() -> None:
        openai_server.reply(LONG_STORY, chunk_delay=0.02)
        agent = Agent(tape, endpoint())
        seen: list[str] = []
        task = asyncio.create_task(agent.arun("Tell me a story", on_delta=seen.append))
        while len(seen) < 2:
            await asyncio.sleep(0.005)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

        assert agent.last_turn is not None and agent.last_turn.status == "interrupted"
        assert_interrupted(tape, agent.last_turn.text)
        assert agent.last_turn.text == "".join(seen)

    asyncio.run(scenario())


def test_leaving_a_sync_stream_early_keeps_what_was_read(
    openai_server: OpenAICompatibleServer, tape: Tape, endpoint: Callable[..., OpenAIModel]
) -> None:
    openai_server.reply(LONG_STORY)
    agent = Agent(tape, endpoint())
    read = []
    for delta in agent.stream("Tell me a story"):
        read.append(delta)
        if len(read) == 4:
            break

    assert_interrupted(tape, "".join(read))


def test_streams_left_unfinished_close_cleanly_when_their_event_loop_shuts_down(tmp_path: Path) -> None:
    # A loop shutting down closes every async generator still open, all at once and in no set order: a
    # step's inner generators may be closed before the turn that holds them. Many turns make every order show.
    script = f"""
import asyncio
from bub_nb.agent import Agent, ScriptedModel
from bub_nb.tape import FileTapeStore, Tape

store = FileTapeStore({str(tmp_path)!r})
story = " ".join(f"word{{n}}" for n in range(40))
agents = [Agent(Tape(f"t{{n}}", store), ScriptedModel([story])) for n in range(30)]
held = []

async def cell():
    for agent in agents:
        deltas = agent.astream("Tell me a story")
        held.append(deltas)  # left unfinished: only the loop's shutdown closes it
        await anext(deltas), await anext(deltas)

asyncio.run(cell())
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)

    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    store = FileTapeStore(tmp_path)
    for number in range(30):
        assert_interrupted(Tape(f"t{number}", store), "word0 word1 ")


def test_a_sync_stream_held_unfinished_until_exit_is_recorded_as_interrupted(tmp_path: Path) -> None:
    script = f"""
from bub_nb.agent import Agent, ScriptedModel
from bub_nb.tape import FileTapeStore, Tape

agent = Agent(Tape("t", FileTapeStore({str(tmp_path)!r})), ScriptedModel([" ".join(f"word{{n}}" for n in range(40))]))
held = agent.stream("Tell me a story")  # read twice, then kept until the interpreter exits
print(next(held) + next(held))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)

    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert_interrupted(Tape("t", FileTapeStore(tmp_path)), done.stdout.rstrip("\n"))


def test_a_tool_that_aborts_the_turn_stops_the_calls_after_it(tape: Tape) -> None:
    from bub_nb.agent import ScriptedModel

    ran: list[str] = []
    agent: Agent

    def stop() -> str:
        """Stop the turn."""
        agent.abort()
        return "stopped"

    def record() -> str:
        """Record a call."""
        ran.append("record")
        return "recorded"

    calls = [{"name": "stop", "arguments": {}}, {"name": "record", "arguments": {}}]
    agent = Agent(tape, ScriptedModel([{"tool_calls": calls}, "never sent"]), tools=[stop, record])
    turn = agent.run("Go")

    assert ran == [] and turn.status == "interrupted"
    # Both calls are on the tape as interrupted, with error results, so the next view stays valid.
    assert kinds(turn.entries) == ["system", "message", "tool_call", "tool_result", "error", "error", "error", "event"]
    results = turn.entries[3].payload["results"]
    assert [r["kind"] for r in results] == ["interrupted", "interrupted"]
    assert [e.payload["kind"] for e in turn.entries[4:7]] == ["tool.interrupted", "tool.interrupted", "interrupted"]
    assert tape.read()[-1] == turn.entries[-1]
    assert [m["role"] for m in tape.view().messages][-3:] == ["assistant", "tool", "tool"]


def test_starting_a_turn_while_one_runs_interrupts_the_first(
    openai_server: OpenAICompatibleServer, tape: Tape, endpoint: Callable[..., OpenAIModel]
) -> None:
    async def scenario() -> None:
        openai_server.delay(600, "slow answer")  # no answer within the test: only the second turn ends the first
        agent = Agent(tape, endpoint())
        first = asyncio.create_task(agent.arun("First"))
        while not openai_server.requests:  # the first turn is waiting for the model
            await asyncio.sleep(0.01)
        openai_server.reply("Second answer.")
        second = await agent.arun("Second")
        interrupted = await first

        assert interrupted.status == "interrupted" and second.status == "ok"
        assert interrupted.entries[-1].id < second.entries[0].id
        assert [
            e.payload["data"]["status"] for e in tape.read() if e.kind == "event" and e.payload["name"] == "run"
        ] == [
            "interrupted",
            "ok",
        ]

    asyncio.run(scenario())
