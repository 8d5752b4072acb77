"""Bub 0.5.1's session and process hooks, called where Bub calls them: ``admit_message`` before a turn,
``continue_prompt`` between the loop's steps, ``provide_model_options``, ``provide_environment`` for tools and
``provide_lifespan`` around the pipeline's life. Each plugin is marked ``@bub.hookimpl`` (pluggy's project ``bub``),
as one written for Bub is, and driven through a real agent turn against the local OpenAI-compatible endpoint."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pluggy
import pytest

from bub_nb.agent import Agent, BuiltinPlugin, TurnPipeline
from bub_nb.agent.hooks.session import AdmitDecision, ModelChoice, ModelOptions, NotAdmitted
from bub_nb.agent.models import OpenAIModel
from bub_nb.agent.tools import ToolContext
from bub_nb.errors import PipelineError
from bub_nb.tape import Tape
from bub_nb.testing import OpenAICompatibleServer

bub_hookimpl = pluggy.HookimplMarker("bub")


@pytest.fixture
def pipeline() -> Iterator[TurnPipeline]:
    pipeline = TurnPipeline(BuiltinPlugin, entry_points=False)
    yield pipeline
    pipeline.close()


def shout(text: str) -> str:
    """Say ``text`` loudly."""
    return text.upper()


@pytest.fixture
def agent(pipeline: TurnPipeline, tape: Tape, model: OpenAIModel) -> Agent:
    return Agent(tape, model, tools=[shout], pipeline=pipeline)


# -- admit_message ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class BubAdmitDecision:
    """Bub's ``bub.channels.admission.AdmitDecision``, field for field."""

    action: str
    reason: str | None = None


def test_a_dropped_message_is_refused_in_one_line_and_writes_nothing(
    pipeline: TurnPipeline, agent: Agent, openai_server: OpenAICompatibleServer
) -> None:
    seen: list[Any] = []

    class Quiet:
        @bub_hookimpl
        def admit_message(self, session_id: str, message: Any, turn: Any) -> Any:
            seen.append((session_id, turn))
            if "spam" in message.content:
                return BubAdmitDecision("drop", "no spam in this notebook")
            return None

    pipeline.register_plugin(Quiet(), name="quiet")
    with pytest.raises(NotAdmitted, match=r"^Plugin 'quiet' did not admit the message; nothing was written: no spam"):
        agent.run("buy spam now")
    assert agent.tape.read() == [] and openai_server.requests == []
    openai_server.reply("Hello.")
    assert agent.run("hello").text == "Hello."
    session_id, snapshot = seen[-1]
    assert session_id == f"python:{agent.tape.name}" and snapshot.is_running is False and snapshot.pending_count == 0


def test_an_admitted_message_runs_whatever_the_action_and_a_bad_answer_is_named(
    pipeline: TurnPipeline, agent: Agent, openai_server: OpenAICompatibleServer
) -> None:
    answers: list[Any] = [AdmitDecision("follow_up"), AdmitDecision("process"), "yes"]

    class Gate:
        @bub_hookimpl
        def admit_message(self, session_id: str, message: Any, turn: Any) -> Any:
            return answers.pop(0)

    pipeline.register_plugin(Gate(), name="gate")
    openai_server.reply("One.").reply("Two.")
    assert [agent.run("a").text, agent.run("b").text] == ["One.", "Two."]
    with pytest.raises(PipelineError, match=r"^admit_message of plugin 'gate' answered 'yes'"):
        agent.run("c")


# -- continue_prompt -------------------------------------------------------------------------------


def test_continue_prompt_adds_a_user_message_before_the_next_model_call(
    pipeline: TurnPipeline, agent: Agent, openai_server: OpenAICompatibleServer
) -> None:
    asked: list[Any] = []

    class Nudge:
        @bub_hookimpl
        async def continue_prompt(self, prompt: Any, tape: Any, state: Any) -> str:
            asked.append((prompt, tape.name, state["run_id"]))
            return "Now answer in one word."

    pipeline.register_plugin(Nudge(), name="nudge")
    openai_server.reply_tool_calls([{"name": "shout", "arguments": {"text": "hi"}}]).reply("HI.")
    turn = agent.run("Shout hi.")
    assert turn.text == "HI." and len(asked) == 1  # asked when the loop went on, not after the answer
    assert asked[0][:2] == ("Shout hi.", agent.tape.name)
    sent = openai_server.last_request["messages"]
    assert [m["role"] for m in sent[-3:]] == ["assistant", "tool", "user"]
    assert sent[-1]["content"] == "Now answer in one word."
    written = agent.tape.query().kinds("message").all()
    assert [e.payload.get("content") for e in written if e.payload["role"] == "user"][-1] == "Now answer in one word."
    assert written[-2].meta["run_id"] == asked[0][2]


def test_continue_prompt_stays_within_max_steps_and_sees_the_prompt_the_last_step_was_given(
    pipeline: TurnPipeline, tape: Tape, model: OpenAIModel, openai_server: OpenAICompatibleServer
) -> None:
    seen: list[Any] = []

    class Forever:
        @bub_hookimpl
        def continue_prompt(self, prompt: Any, tape: Any, state: Any) -> str:
            seen.append(prompt)
            return f"Keep going ({len(seen)})."

    pipeline.register_plugin(Forever(), name="forever")
    agent = Agent(tape, model, tools=[shout], max_steps=2, pipeline=pipeline)
    for _ in range(3):
        openai_server.reply_tool_calls([{"name": "shout", "arguments": {"text": "hi"}}])
    turn = agent.run("Shout.")
    assert turn.status == "max_steps" and len(openai_server.requests) == 2
    assert seen == ["Shout.", "Keep going (1)."]


# -- provide_model_options -------------------------------------------------------------------------


def test_model_options_are_merged_from_every_plugin_as_bub_merges_them(pipeline: TurnPipeline, tmp_path: Path) -> None:
    seen: list[Any] = []

    @dataclass(frozen=True)
    class BubChoice:  # Bub's bub.model_selection.ModelChoice
        id: str
        name: str | None = None
        description: str | None = None
        meta: dict[str, Any] | None = None

    class Local:
        @bub_hookimpl
        def provide_model_options(self, session_id: str, workspace: Path | None) -> Any:
            seen.append((session_id, workspace))
            return ModelOptions([ModelChoice("offline:echo", "Echo")], current_model="offline:echo")

    class Hosted:
        @bub_hookimpl
        def provide_model_options(self, session_id: str, workspace: Path | None) -> Any:
            return ModelOptions([BubChoice("openrouter:qwen/qwen3", description="hosted")])  # type: ignore[list-item]

    pipeline.register_plugin(Local(), name="local")
    pipeline.register_plugin(Hosted(), name="hosted")
    options = pipeline.model_options("python:lesson", workspace=tmp_path)
    assert [choice.id for choice in options.models] == ["openrouter:qwen/qwen3", "offline:echo"]
    assert options.models[0].description == "hosted" and options.current_model == "offline:echo"
    assert seen == [("python:lesson", tmp_path.resolve())]


def test_a_model_options_answer_that_is_not_one_is_refused(pipeline: TurnPipeline) -> None:
    class Wrong:
        @bub_hookimpl
        def provide_model_options(self, session_id: str) -> Any:
            return ["gpt"]

    pipeline.register_plugin(Wrong(), name="wrong")
    with pytest.raises(PipelineError, match=r"^provide_model_options answered \['gpt'\]"):
        pipeline.model_options("s")


# -- provide_environment ---------------------------------------------------------------------------


class Sandbox:
    """A stand-in for Bub's ``Environment``: runs a process with its own variables, closed at the end."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace
        self.closed = False

    async def run(self, *argv: str) -> str:
        process = await asyncio.create_subprocess_exec(
            *argv, cwd=self.workspace, env={"GREETING": "from the sandbox"}, stdout=asyncio.subprocess.PIPE
        )
        out, _ = await process.communicate()
        return out.decode().strip()

    async def close(self) -> None:
        self.closed = True


def test_tools_run_their_processes_in_the_environment_a_plugin_provides_once_per_session(
    pipeline: TurnPipeline, tape: Tape, model: OpenAIModel, openai_server: OpenAICompatibleServer, tmp_path: Path
) -> None:
    made: list[Sandbox] = []

    class Provider:
        @bub_hookimpl
        def provide_environment(self, session_id: str, workspace: Path) -> Sandbox:
            made.append(Sandbox(workspace))
            return made[-1]

    async def greet(context: ToolContext) -> str:
        """Print the greeting the environment sets."""
        environment = context.state["_runtime_environment"]
        assert environment is context.state["environment"]
        return await environment.run("sh", "-c", 'echo "$GREETING in $(pwd)"')

    pipeline.register_plugin(Provider(), name="provider")
    agent = Agent(tape, model, tools=[greet], pipeline=pipeline)
    for _ in range(2):
        openai_server.reply_tool_calls([{"name": "greet", "arguments": {}}]).reply("Greeted.")
        agent.run("Greet.")
    tool_message = next(m for m in openai_server.last_request["messages"] if m["role"] == "tool")
    assert tool_message["content"] == f"from the sandbox in {Path.cwd().resolve()}"
    assert len(made) == 1 and not made[0].closed  # once per session, kept until the pipeline closes
    pipeline.close()
    assert made[0].closed


def test_without_an_environment_plugin_tools_run_even_where_the_current_folder_is_gone(
    agent: Agent, openai_server: OpenAICompatibleServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()  # a server started from a folder deleted since: nothing asks where it works
    openai_server.reply_tool_calls([{"name": "shout", "arguments": {"text": "hi"}}]).reply("Shouted.")
    assert agent.run("Shout hi.").text == "Shouted."
    tool_message = next(m for m in openai_server.last_request["messages"] if m["role"] == "tool")
    assert tool_message["content"] == "HI"


# -- provide_lifespan ------------------------------------------------------------------------------


def test_lifespans_are_entered_on_start_and_left_on_close_last_first(pipeline: TurnPipeline) -> None:
    log: list[str] = []

    class Database:
        @bub_hookimpl
        async def provide_lifespan(self) -> AsyncIterator[None]:
            log.append("database open")
            try:
                yield
            finally:
                log.append("database closed")

    class Cache:
        @bub_hookimpl
        def provide_lifespan(self) -> Any:
            @contextlib.contextmanager
            def owned() -> Iterator[None]:
                log.append("cache open")
                yield
                log.append("cache closed")

            return owned()

    pipeline.register_plugin(Database(), name="database")
    pipeline.start()
    pipeline.start()  # again: nothing more is entered
    pipeline.register_plugin(Cache(), name="cache")  # after start: entered on registering
    assert log == ["database open", "cache open"] and pipeline.started
    pipeline.close()
    pipeline.close()
    assert log == ["database open", "cache open", "cache closed", "database closed"] and not pipeline.started


def test_a_lifespan_that_is_not_one_is_refused_and_leaves_none_entered(pipeline: TurnPipeline) -> None:
    log: list[str] = []

    class Good:
        @bub_hookimpl
        def provide_lifespan(self) -> Iterator[None]:
            log.append("open")
            yield
            log.append("closed")

    class Bad:
        @bub_hookimpl
        def provide_lifespan(self) -> Any:
            return 42

    pipeline.register_plugin(Good(), name="good")
    pipeline.register_plugin(Bad(), name="bad")
    with pytest.raises(PipelineError, match=r"^provide_lifespan of plugin 'bad' answered int"):
        pipeline.start()
    assert log == ["open", "closed"] and not pipeline.started
