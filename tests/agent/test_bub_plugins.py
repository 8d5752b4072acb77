"""Plugins written for Bub (``@bub.hookimpl``, entry-point group ``bub``) run in a notebook, or are refused in one line.

``bub.hookimpl`` is ``pluggy.HookimplMarker("bub")``; the plugins here are marked with that marker, as a Bub
plugin is, without Bub itself (which needs Python 3.12: ``tests/integration/test_real_bub.py`` runs the real
plugins beside it). Each of Bub's interception hooks has a plugin of its own here, driven through a real agent
turn against the local OpenAI-compatible endpoint.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pluggy
import pytest

from bub_nb.agent import Agent, BuiltinPlugin, TurnPipeline
from bub_nb.agent.hooks.interception import LlmCallDecision, ToolCallDecision
from bub_nb.agent.hooks.specs import BUB_ONLY_HOOKS
from bub_nb.agent.models import OpenAIModel
from bub_nb.errors import PipelineError
from bub_nb.tape import Tape
from bub_nb.testing import OpenAICompatibleServer

bub_hookimpl = pluggy.HookimplMarker("bub")  # what ``bub.hookimpl`` is


@pytest.fixture
def pipeline() -> TurnPipeline:
    return TurnPipeline(BuiltinPlugin, entry_points=False)


@pytest.fixture
def agent(pipeline: TurnPipeline, tape: Tape, model: OpenAIModel) -> Agent:
    return Agent(tape, model, tools=[shout], pipeline=pipeline)


def shout(text: str) -> str:
    """Say ``text`` loudly."""
    return text.upper()


def test_a_plugin_marked_for_bub_adds_its_system_prompt(pipeline: TurnPipeline) -> None:
    class Rules:
        @bub_hookimpl
        def system_prompt(self, prompt: Any, state: Any) -> str:
            return "Answer in French."

    pipeline.register_plugin(Rules(), name="rules")
    assert pipeline.system_prompt("hi", {}).endswith("\n\nAnswer in French.")


@pytest.mark.parametrize("hook", sorted(BUB_ONLY_HOOKS))
def test_a_bub_plugin_implementing_a_hook_a_notebook_has_no_use_for_is_refused_in_one_line_naming_it(
    pipeline: TurnPipeline, hook: str
) -> None:
    def implementation(self: Any, *args: Any) -> None:
        return None

    plugin = type("Channels", (), {hook: bub_hookimpl(implementation)})()
    with pytest.raises(
        PipelineError, match=rf"^Plugin 'channels' implements Bub's '{hook}', which bub_nb does not"
    ) as err:
        pipeline.register_plugin(plugin, name="channels")
    assert "\n" not in str(err.value)
    assert "channels" not in pipeline.plugin_names


def test_before_llm_call_changes_the_messages_the_model_receives(
    pipeline: TurnPipeline, agent: Agent, openai_server: OpenAICompatibleServer
) -> None:
    seen: list[Any] = []

    class Budget:
        @bub_hookimpl
        def before_llm_call(self, request: Any, state: Any) -> Any:
            seen.append(request)
            return dataclasses.replace(request, messages=[*request.messages, {"role": "user", "content": "Be brief."}])

    pipeline.register_plugin(Budget(), name="budget")
    openai_server.reply("Short.")
    agent.run("Tell me about tapes.")
    sent = openai_server.last_request["messages"]
    assert sent[-1] == {"role": "user", "content": "Be brief."}
    assert sent[-2]["content"] == "Tell me about tapes."
    assert seen[0].model == agent.model.name and "shout" in seen[0].tool_names


def test_before_llm_call_may_answer_instead_of_the_model(
    pipeline: TurnPipeline, agent: Agent, openai_server: OpenAICompatibleServer
) -> None:
    class Guard:
        @bub_hookimpl
        def before_llm_call(self, request: Any, state: Any) -> Any:
            return LlmCallDecision.finish("Over budget; not asking the model.")

    pipeline.register_plugin(Guard(), name="guard")
    turn = agent.run("Tell me about tapes.")
    assert turn.text == "Over budget; not asking the model."
    assert openai_server.requests == []
    assert agent.tape.query().kinds("message").all()[-1].payload["content"] == "Over budget; not asking the model."


def test_after_llm_call_sees_each_calls_outcome_and_a_failing_observer_breaks_nothing(
    pipeline: TurnPipeline, agent: Agent, openai_server: OpenAICompatibleServer
) -> None:
    results: list[Any] = []

    class Meter:
        @bub_hookimpl
        def after_llm_call(self, request: Any, result: Any, state: Any) -> None:
            results.append(result)

    class Broken:
        @bub_hookimpl
        def after_llm_call(self, request: Any, result: Any, state: Any) -> None:
            raise RuntimeError("observer bug")

    pipeline.register_plugin(Meter(), name="meter")
    pipeline.register_plugin(Broken(), name="broken")
    openai_server.reply_tool_calls([{"name": "shout", "arguments": {"text": "hi"}}]).reply("Done.")
    assert agent.run("Shout hi.").text == "Done."
    assert [result.tool_calls[0]["function"]["name"] if result.tool_calls else result.text for result in results] == [
        "shout",
        "Done.",
    ]
    assert all(result.error is None and result.usage is not None for result in results)


@pytest.mark.parametrize(
    ("decision", "model_reads"),
    [
        (ToolCallDecision.proceed({"text": "changed"}), "CHANGED"),
        (ToolCallDecision.replace("from the cache"), "from the cache"),
        (ToolCallDecision.deny("shouting is not allowed here"), "shouting is not allowed here"),
    ],
)
def test_before_tool_call_proceeds_with_other_arguments_replaces_or_denies_the_call(
    pipeline: TurnPipeline, agent: Agent, openai_server: OpenAICompatibleServer, decision: Any, model_reads: str
) -> None:
    class Policy:
        @bub_hookimpl
        def before_tool_call(self, call: Any, state: Any) -> Any:
            assert call.tool == "shout" and call.arguments == {"text": "hi"}
            return decision

    pipeline.register_plugin(Policy(), name="policy")
    openai_server.reply_tool_calls([{"name": "shout", "arguments": {"text": "hi"}}]).reply("Done.")
    agent.run("Shout hi.")
    tool_message = next(m for m in openai_server.last_request["messages"] if m["role"] == "tool")
    assert model_reads in tool_message["content"]


def test_after_tool_call_sees_the_outcome_and_may_replace_what_the_model_reads(
    pipeline: TurnPipeline, agent: Agent, openai_server: OpenAICompatibleServer
) -> None:
    class Spill:
        @bub_hookimpl
        def after_tool_call(self, call: Any, result: Any, state: Any) -> None:
            result.result = f"[{call.tool} said {result.result!r}]"

    pipeline.register_plugin(Spill(), name="spill")
    openai_server.reply_tool_calls([{"name": "shout", "arguments": {"text": "hi"}}]).reply("Done.")
    agent.run("Shout hi.")
    tool_message = next(m for m in openai_server.last_request["messages"] if m["role"] == "tool")
    assert tool_message["content"] == "[shout said 'HI']"


# -- Bub's entry-point group ---------------------------------------------------------------------


@pytest.fixture
def bub_entry_points(tmp_path: Path) -> Iterator[Path]:
    """An installed distribution whose entry points are in Bub's group: a plugin that runs, and one refused."""
    (tmp_path / "notebook_rules.py").write_text(
        "import pluggy\n"
        "hookimpl = pluggy.HookimplMarker('bub')\n"
        "class Rules:\n"
        "    @hookimpl\n"
        "    def system_prompt(self, prompt, state):\n"
        "        return 'Rules from a Bub plugin.'\n"
        "class Channels:\n"
        "    @hookimpl\n"
        "    def provide_channels(self, message_handler):\n"
        "        return []\n"
        "rules = Rules()\n"
        "channels = Channels()\n"
    )
    info = tmp_path / "notebook_rules-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: notebook-rules\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[bub]\nrules = notebook_rules:rules\nchannels = notebook_rules:channels\nmissing = no_such_module:plugin\n"
    )
    sys.path.insert(0, str(tmp_path))
    try:
        yield tmp_path
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("notebook_rules", None)


def test_plugins_of_bubs_entry_point_group_load_and_those_that_cannot_run_are_refused_by_name(
    bub_entry_points: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BUB_NB_BUB_PLUGINS", raising=False)
    pipeline = TurnPipeline(BuiltinPlugin)
    assert "rules" in pipeline.plugin_names
    assert pipeline.system_prompt("hi", {}).endswith("Rules from a Bub plugin.")
    refused = pipeline.hooks.refused
    assert set(refused) >= {"channels", "missing"} and "channels" not in pipeline.plugin_names
    assert "'provide_channels'" in refused["channels"] and "no_such_module" in refused["missing"]
    assert all("\n" not in line for line in refused.values())


def test_bubs_entry_point_group_is_left_out_when_the_setting_says_so(
    bub_entry_points: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BUB_NB_BUB_PLUGINS", "0")
    pipeline = TurnPipeline(BuiltinPlugin)
    assert "rules" not in pipeline.plugin_names and pipeline.hooks.refused == {}
