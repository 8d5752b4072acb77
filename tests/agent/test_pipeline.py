"""The turn pipeline keeps its stage order, firstresult/broadcast semantics and fallbacks (docs/plugins.md)."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bub_nb.agent.framework import TurnPipeline, TurnResult
from bub_nb.agent.hooks.specs import Envelope, StreamEvent, hookimpl
from bub_nb.context import LAST_ANCHOR, build_view, window
from bub_nb.errors import ModelError
from bub_nb.tape import FileTapeStore, MemoryTapeStore, open_tape


class Echo:
    """A model that answers with the prompt, upper-cased."""

    @hookimpl
    def run_model(self, prompt: str) -> str:
        return prompt.upper()


class Streamer:
    """A model that streams its answer word by word."""

    def __init__(self, *words: str, error: tuple[str, str] | None = None) -> None:
        self.words = words
        self.error = error

    @hookimpl
    def run_model_stream(self, prompt: str) -> AsyncIterator[StreamEvent]:
        async def events() -> AsyncIterator[StreamEvent]:
            for word in self.words:
                yield StreamEvent.text(word)
            if self.error:
                yield StreamEvent.error(*self.error)

        return events()


class Recorder:
    """Remembers every stage it observed."""

    def __init__(self) -> None:
        self.saved: list[tuple[str, dict[str, Any], str]] = []
        self.dispatched: list[Any] = []
        self.errors: list[tuple[str, Exception]] = []

    @hookimpl
    def save_state(self, session_id: str, state: dict[str, Any], model_output: str) -> None:
        self.saved.append((session_id, dict(state), model_output))

    @hookimpl
    def dispatch_outbound(self, message: Any) -> bool:
        self.dispatched.append(message)
        return True

    @hookimpl
    def on_error(self, stage: str, error: Exception) -> None:
        self.errors.append((stage, error))


def pipeline_with(*plugins: object, builtin: object | None = None) -> TurnPipeline:
    pipeline = TurnPipeline(builtin, entry_points=False)
    for plugin in plugins:
        pipeline.register_plugin(plugin)
    return pipeline


def turn(pipeline: TurnPipeline, message: Any, **options: Any) -> TurnResult:
    return asyncio.run(pipeline.process_inbound(message, **options))


def notebook_cell(content: str = "hello") -> Envelope:
    return Envelope("notebook", "analysis.ipynb", content)


# -- resolve_session ---------------------------------------------------------------------------


def test_session_defaults_to_channel_and_chat() -> None:
    result = turn(pipeline_with(Echo()), notebook_cell())
    assert result.session_id == "notebook:analysis.ipynb"


def test_missing_channel_and_chat_each_default() -> None:
    assert turn(pipeline_with(Echo()), {"content": "hi"}).session_id == "default:default"
    assert turn(pipeline_with(Echo()), {"channel": "cli", "content": "hi"}).session_id == "cli:default"


def test_envelope_session_id_is_used_before_the_channel_fallback() -> None:
    result = turn(pipeline_with(Echo()), Envelope("notebook", "a.ipynb", "hi", session_id="kept"))
    assert result.session_id == "kept"


def test_resolved_session_is_written_back_into_a_dict_envelope() -> None:
    class Resolver:
        @hookimpl
        def resolve_session(self, message: Any) -> str:
            return "course:week-1"

    inbound = {"channel": "notebook", "chat_id": "a.ipynb", "content": "hi"}
    turn(pipeline_with(Echo(), Resolver()), inbound)
    assert inbound["session_id"] == "course:week-1"


def test_later_stages_see_the_resolved_session_on_a_frozen_envelope() -> None:
    seen: list[str | None] = []

    class Spy:
        @hookimpl
        def dispatch_outbound(self, message: Any) -> None:
            seen.append("dispatch")

        @hookimpl
        def build_prompt(self, message: Envelope) -> None:
            seen.append(message.session_id)

    turn(pipeline_with(Echo(), Spy()), notebook_cell())
    assert seen == ["notebook:analysis.ipynb", "dispatch"]


def test_later_registered_plugin_wins_a_firstresult_hook() -> None:
    class Named:
        def __init__(self, name: str) -> None:
            self.name = name

        @hookimpl
        def resolve_session(self) -> str:
            return self.name

    pipeline = pipeline_with(Echo(), Named("plugin"), builtin=Named("builtin"))
    assert turn(pipeline, notebook_cell()).session_id == "plugin"
    assert pipeline.plugin_names[-1] == "builtin"


# -- load_state --------------------------------------------------------------------------------


def test_state_merges_low_priority_first_so_the_last_registered_wins() -> None:
    class Contributes:
        def __init__(self, **state: Any) -> None:
            self.state = state

        @hookimpl
        def load_state(self) -> dict[str, Any] | None:
            return self.state or None

    builtin = Contributes(model="offline", tape="t1")
    pipeline = pipeline_with(Echo(), Contributes(model="openai:gpt-4o"), Contributes(), builtin=builtin)
    assert turn(pipeline, notebook_cell()).state == {"model": "openai:gpt-4o", "tape": "t1"}


# -- build_prompt ------------------------------------------------------------------------------


def test_prompt_falls_back_to_the_inbound_content() -> None:
    assert turn(pipeline_with(Echo()), notebook_cell("plot it")).model_output == "PLOT IT"


def test_a_falsy_prompt_falls_back_without_asking_lower_plugins() -> None:
    asked: list[str] = []

    class Builds:
        def __init__(self, name: str, prompt: Any) -> None:
            self.name, self.prompt = name, prompt

        @hookimpl
        def build_prompt(self) -> Any:
            asked.append(self.name)
            return self.prompt

    pipeline = pipeline_with(Echo(), Builds("low", "from low"), Builds("high", ""))
    assert turn(pipeline, notebook_cell("raw")).prompt == "raw"
    assert asked == ["high"]


def test_a_none_prompt_lets_the_next_plugin_build_it() -> None:
    class Builds:
        def __init__(self, prompt: str | None) -> None:
            self.prompt = prompt

        @hookimpl
        def build_prompt(self, message: Any, state: dict[str, Any]) -> str | None:
            return self.prompt

    assert turn(pipeline_with(Echo(), Builds("built"), Builds(None)), notebook_cell()).model_output == "BUILT"


# -- run_model / run_model_stream --------------------------------------------------------------


def test_a_non_streaming_caller_gets_a_stream_joined() -> None:
    assert turn(pipeline_with(Streamer("Hel", "lo", "!")), notebook_cell()).model_output == "Hello!"


def test_a_streaming_caller_gets_a_run_model_answer_as_one_text_chunk() -> None:
    events: list[StreamEvent] = []
    result = turn(pipeline_with(Echo()), notebook_cell("hi"), on_event=events.append)
    assert events == [StreamEvent.text("HI")]
    assert result.model_output == "HI"


def test_a_streaming_caller_receives_every_event_in_order() -> None:
    events: list[StreamEvent] = []

    async def sink(event: StreamEvent) -> None:
        events.append(event)

    turn(pipeline_with(Streamer("a", "b")), notebook_cell(), on_event=sink)
    assert [event.data["delta"] for event in events] == ["a", "b"]


def test_stream_error_events_reach_on_error_and_the_text_is_kept() -> None:
    recorder = Recorder()
    pipeline = pipeline_with(Streamer("partial", error=("rate_limit", "slow down")), recorder)
    assert turn(pipeline, notebook_cell()).model_output == "partial"
    [(stage, error)] = recorder.errors
    assert stage == "run_model"
    assert isinstance(error, ModelError)
    assert "rate_limit: slow down" in str(error)


def test_the_later_model_plugin_wins_across_both_model_hooks() -> None:
    assert turn(pipeline_with(Echo(), Streamer("streamed")), notebook_cell()).model_output == "streamed"
    assert turn(pipeline_with(Streamer("streamed"), Echo()), notebook_cell("x")).model_output == "X"


def test_a_model_plugin_returning_none_defers_to_the_next_one() -> None:
    class Declines:
        @hookimpl
        def run_model_stream(self) -> None:
            return None

    assert turn(pipeline_with(Echo(), Declines()), notebook_cell("x")).model_output == "X"


def test_without_model_output_on_error_is_told_and_later_stages_still_run() -> None:
    recorder = Recorder()
    result = turn(pipeline_with(recorder), notebook_cell("unchanged"))
    assert result.model_output == "unchanged"
    assert [stage for stage, _ in recorder.errors] == ["run_model"]
    assert "No plugin returned model output" in str(recorder.errors[0][1])
    assert recorder.saved == [("notebook:analysis.ipynb", {}, "")]
    assert [outbound.content for outbound in recorder.dispatched] == ["unchanged"]


def test_without_model_output_a_multimodal_prompt_falls_back_to_the_content() -> None:
    class Multimodal:
        @hookimpl
        def build_prompt(self) -> list[dict[str, Any]]:
            return [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "x"}}]

    assert turn(pipeline_with(Multimodal()), notebook_cell("caption")).model_output == "caption"


def test_async_hook_implementations_are_awaited() -> None:
    class AsyncPlugin:
        @hookimpl
        async def resolve_session(self) -> str:
            await asyncio.sleep(0)
            return "async-session"

        @hookimpl
        async def run_model(self, prompt: str) -> str:
            return f"awaited {prompt}"

    result = turn(pipeline_with(AsyncPlugin()), notebook_cell("x"))
    assert (result.session_id, result.model_output) == ("async-session", "awaited x")


# -- save_state --------------------------------------------------------------------------------


def test_save_state_runs_when_the_model_raises_and_gets_the_partial_output() -> None:
    class Breaks:
        @hookimpl
        def run_model_stream(self) -> AsyncIterator[StreamEvent]:
            async def events() -> AsyncIterator[StreamEvent]:
                yield StreamEvent.text("half an ans")
                raise ConnectionError("endpoint went away")

            return events()

    recorder = Recorder()
    with pytest.raises(ConnectionError, match="endpoint went away"):
        turn(pipeline_with(Breaks(), recorder), notebook_cell())
    assert recorder.saved == [("notebook:analysis.ipynb", {}, "half an ans")]
    assert recorder.dispatched == []


def test_an_interrupted_stream_still_saves_what_arrived() -> None:
    class Interrupted:
        @hookimpl
        def run_model_stream(self) -> AsyncIterator[StreamEvent]:
            async def events() -> AsyncIterator[StreamEvent]:
                yield StreamEvent.text("so far")
                raise KeyboardInterrupt

            return events()

    recorder = Recorder()
    with pytest.raises(KeyboardInterrupt):
        turn(pipeline_with(Interrupted(), recorder), notebook_cell())
    assert recorder.saved[0][2] == "so far"


def test_a_stream_is_closed_as_soon_as_its_event_sink_stops_the_turn() -> None:
    closed: list[str] = []

    class Long:
        @hookimpl
        def run_model_stream(self) -> AsyncIterator[StreamEvent]:
            async def events() -> AsyncIterator[StreamEvent]:
                try:
                    for number in range(10):
                        yield StreamEvent.text(f"{number} ")
                finally:
                    closed.append("closed")

            return events()

        @hookimpl
        def save_state(self) -> None:
            at_save.append(list(closed))

    def sink(event: StreamEvent) -> None:
        raise KeyboardInterrupt

    at_save: list[list[str]] = []
    with pytest.raises(KeyboardInterrupt):
        turn(pipeline_with(Long()), notebook_cell(), on_event=sink)
    assert at_save == [["closed"]]  # by the turn itself, not left for the event loop's shutdown


def test_save_state_sees_the_failure_through_exc_info() -> None:
    seen: list[type[BaseException] | None] = []

    class Lifespan:
        @hookimpl
        def save_state(self) -> None:
            seen.append(sys.exc_info()[0])

    class Fails:
        @hookimpl
        def run_model(self) -> str:
            raise ValueError("bad")

    pipeline = pipeline_with(Lifespan(), Fails())
    with pytest.raises(ValueError, match="bad"):
        turn(pipeline, notebook_cell())
    turn(pipeline_with(Lifespan(), Echo()), notebook_cell())
    assert seen == [ValueError, None]


# -- render_outbound / dispatch_outbound -------------------------------------------------------


def test_outbound_batches_are_flattened_and_each_dispatched() -> None:
    class Splits:
        @hookimpl
        def render_outbound(self, message: Envelope, model_output: str) -> list[Envelope]:
            return [Envelope(message.channel, message.chat_id, word) for word in model_output.split()]

    class Audits:
        @hookimpl
        def render_outbound(self, session_id: str) -> list[dict[str, Any]]:
            return [{"channel": "audit", "chat_id": session_id, "content": "turn done"}]

    class Silent:
        @hookimpl
        def render_outbound(self) -> list[Any]:
            return []

    recorder = Recorder()
    result = turn(pipeline_with(Echo(), Splits(), Audits(), Silent(), recorder), notebook_cell("two words"))
    assert [_content(outbound) for outbound in result.outbounds] == ["turn done", "TWO", "WORDS"]
    assert list(recorder.dispatched) == list(result.outbounds)


def _content(outbound: Any) -> Any:
    return outbound["content"] if isinstance(outbound, dict) else outbound.content


def test_without_rendered_outbounds_one_envelope_returns_on_the_inbound_channel() -> None:
    result = turn(pipeline_with(Echo()), notebook_cell("hi"))
    assert result.outbounds == (Envelope("notebook", "analysis.ipynb", "HI", session_id="notebook:analysis.ipynb"),)


def test_every_dispatch_observer_gets_every_outbound() -> None:
    first, second = Recorder(), Recorder()
    turn(pipeline_with(Echo(), first, second), notebook_cell())
    assert len(first.dispatched) == len(second.dispatched) == 1


# -- errors ------------------------------------------------------------------------------------


def test_a_failing_turn_is_logged_observed_and_reraised(caplog: pytest.LogCaptureFixture) -> None:
    class Fails:
        @hookimpl
        def load_state(self) -> dict[str, Any]:
            raise RuntimeError("state store offline")

    recorder = Recorder()
    with caplog.at_level(logging.ERROR, logger="bub_nb.agent.framework"), pytest.raises(RuntimeError) as raised:
        turn(pipeline_with(Echo(), recorder, Fails()), notebook_cell())
    assert recorder.errors == [("turn", raised.value)]
    assert "Turn failed" in caplog.text


def test_one_failing_error_observer_does_not_silence_the_others(caplog: pytest.LogCaptureFixture) -> None:
    class BrokenObserver:
        @hookimpl
        def on_error(self) -> None:
            raise LookupError("observer bug")

    class Fails:
        @hookimpl
        def run_model(self) -> str:
            raise ValueError("model bug")

    recorder = Recorder()
    with pytest.raises(ValueError, match="model bug"):
        turn(pipeline_with(recorder, BrokenObserver(), Fails()), notebook_cell())
    assert [stage for stage, _ in recorder.errors] == ["turn"]
    assert "observer bug" in caplog.text


# -- hooks the agent asks ----------------------------------------------------------------------


def test_system_prompt_parts_join_lowest_priority_first() -> None:
    class Part:
        def __init__(self, text: str | None) -> None:
            self.text = text

        @hookimpl
        def system_prompt(self, state: dict[str, Any]) -> str | None:
            return self.text

    pipeline = pipeline_with(Part("Workspace rules from AGENTS.md"), Part(None), builtin=Part("You are Bub."))
    assert pipeline.system_prompt("hi", {}) == "You are Bub.\n\nWorkspace rules from AGENTS.md"


def test_an_async_system_prompt_part_is_refused_by_name() -> None:
    class AsyncPart:
        @hookimpl
        async def system_prompt(self) -> str:
            return "never"

    pipeline = pipeline_with()
    pipeline.register_plugin(AsyncPart(), name="async-part")
    with pytest.raises(TypeError, match="'system_prompt' of plugin 'async-part'"):
        pipeline.system_prompt("hi", {})


def test_the_tape_store_comes_from_the_latest_plugin_that_provides_one(tmp_path: Path) -> None:
    class Provides:
        def __init__(self, store: Any) -> None:
            self.store = store

        @hookimpl
        def provide_tape_store(self) -> Any:
            return self.store

    plugin_store, file_store = MemoryTapeStore(), FileTapeStore(tmp_path)
    pipeline = pipeline_with(Provides(None), Provides(plugin_store), builtin=Provides(file_store))
    assert pipeline.tape_store() is plugin_store
    assert pipeline_with().tape_store() is None


def test_the_view_comes_from_a_plugin_view_or_strategy_else_the_requested_mode(tmp_path: Path) -> None:
    tape = open_tape("context", home=tmp_path)
    tape.append_message({"role": "user", "content": "first"})
    tape.handoff("phase/two", {"summary": "first done"})
    tape.append_message({"role": "user", "content": "second"})
    prebuilt = build_view(tape, None)

    class Answers:
        def __init__(self, answer: Any) -> None:
            self.answer = answer

        @hookimpl
        def build_tape_context(self, tape: Any, mode: Any) -> Any:
            return self.answer

    def contents(pipeline: TurnPipeline) -> list[str]:
        return [message["content"] for message in pipeline.build_tape_context(tape, LAST_ANCHOR).messages]

    assert contents(pipeline_with()) == ['[Anchor created: phase/two]: {"summary": "first done"}', "second"]
    assert contents(pipeline_with(Answers(window(1)))) == ["second"]
    assert pipeline_with(Answers(prebuilt), Answers(None)).build_tape_context(tape, LAST_ANCHOR) is prebuilt


# -- plugins and the sync wrapper --------------------------------------------------------------


def test_entry_point_plugins_load_after_builtin_and_before_registered_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "course_plugin.py").write_text(
        "from bub_nb.agent.hooks.specs import hookimpl\n"
        "@hookimpl\n"
        "def resolve_session():\n"
        "    return 'from-entry-point'\n"
    )
    dist = tmp_path / "course_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: course-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[bub_nb]\ncourse = course_plugin\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    class Builtin:
        @hookimpl
        def resolve_session(self) -> str:
            return "from-builtin"

    pipeline = TurnPipeline(Builtin())
    assert pipeline.plugin_names == ["course", "builtin"]
    assert turn(pipeline, notebook_cell()).session_id == "from-entry-point"

    class Override:
        @hookimpl
        def resolve_session(self) -> str:
            return "from-registered"

    pipeline.register_plugin(Override(), name="override")
    assert turn(pipeline, notebook_cell()).session_id == "from-registered"


def test_the_sync_wrapper_runs_without_an_event_loop() -> None:
    assert pipeline_with(Echo()).process_inbound_sync(notebook_cell("hi")).model_output == "HI"


def test_the_sync_wrapper_runs_inside_a_running_event_loop() -> None:
    async def notebook_kernel() -> str:
        return pipeline_with(Streamer("still ", "works")).process_inbound_sync(notebook_cell()).model_output

    assert asyncio.run(notebook_kernel()) == "still works"


def test_registering_a_name_again_replaces_that_plugin_and_unregister_removes_it() -> None:
    from bub_nb.agent.hooks.specs import hookimpl
    from bub_nb.errors import BubNbError

    class Greeter:
        def __init__(self, word: str) -> None:
            self.word = word

        @hookimpl
        def system_prompt(self, prompt: object, state: object) -> str:
            return self.word

    pipeline = TurnPipeline(entry_points=False)
    pipeline.register_plugin(Greeter("first"), name="greeter")
    pipeline.register_plugin(Greeter("second"), name="greeter")  # a notebook cell run twice
    assert pipeline.system_prompt("", {}) == "second"
    pipeline.unregister_plugin("greeter")
    assert pipeline.system_prompt("", {}) == ""
    with pytest.raises(BubNbError, match="No plugin 'greeter'"):
        pipeline.unregister_plugin("greeter")


def test_plugin_registration_refusals_are_pipeline_errors_outside_any_turn() -> None:
    from bub_nb.errors import BubNbError, PipelineError

    pipeline = TurnPipeline(entry_points=False)
    with pytest.raises(PipelineError, match="belongs to bub_nb's own plugin") as builtin_name:
        pipeline.register_plugin(object(), name="builtin")
    with pytest.raises(PipelineError, match="No plugin 'nobody'"):
        pipeline.unregister_plugin("nobody")
    assert isinstance(builtin_name.value, BubNbError) and builtin_name.value.turn is None
