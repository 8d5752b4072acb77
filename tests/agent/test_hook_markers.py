"""The hooks do what pluggy's markers say: wrappers run around the others, order and firstresult come from markers."""

from __future__ import annotations

from collections.abc import AsyncIterator, Generator
from pathlib import Path
from typing import Any

import pluggy
import pytest

from bub_nb.agent import BuiltinPlugin, Envelope, StreamEvent, TurnPipeline, hookimpl
from bub_nb.agent.hooks.runtime import HookRuntime
from bub_nb.agent.hooks.specs import PROJECT
from bub_nb.errors import PipelineError


def cell(text: str = "hi", **fields: Any) -> Envelope:
    return Envelope("notebook", "lesson.ipynb", text, **fields)


class Echo:
    @hookimpl
    def run_model(self, prompt: str) -> str:
        return f"echo {prompt}"


class Streamer:
    @hookimpl
    async def run_model_stream(self, prompt: str) -> AsyncIterator[StreamEvent]:
        async def events() -> AsyncIterator[StreamEvent]:
            for word in ("streamed ", prompt):
                yield StreamEvent.text(word)

        return events()


def test_a_wrapper_runs_around_the_builtin_implementation_and_may_replace_its_answer() -> None:
    pipeline = TurnPipeline(BuiltinPlugin, entry_points=False)
    calls: list[Any] = []

    class Session:
        @hookimpl(wrapper=True)
        def resolve_session(self, message: Any) -> Generator[None, Any, Any]:
            calls.append("before")
            session_id = yield
            calls.append(("after", session_id))
            return f"course/{session_id}"

    pipeline.register_plugin(Echo(), name="echo")
    pipeline.register_plugin(Session(), name="session")
    result = pipeline.process_inbound_sync(cell(session_id="s1"))

    # The builtin answers with the envelope's own session id; the wrapper sees that answer and replaces it.
    assert calls == ["before", ("after", "s1")]
    assert result.session_id == "course/s1"


def test_an_old_style_hookwrapper_gets_a_result_it_may_force() -> None:
    pipeline = TurnPipeline(BuiltinPlugin, entry_points=False)

    class Rules:
        @hookimpl(hookwrapper=True)
        def system_prompt(self, prompt: Any, state: Any) -> Generator[None, Any, None]:
            outcome = yield
            parts = outcome.get_result()
            outcome.force_result(["Answer in French.", *parts])  # answers in call order: highest priority first

    pipeline.register_plugin(Rules(), name="rules")
    assert pipeline.system_prompt("hi", {}).endswith("\n\nAnswer in French.")


def test_a_wrapper_sees_awaited_answers_of_coroutine_implementations_and_their_exceptions() -> None:
    pipeline = TurnPipeline(entry_points=False)
    seen: list[Any] = []

    class Loader:
        @hookimpl
        async def load_state(self, session_id: str) -> dict[str, Any]:
            return {"loaded": session_id}

        @hookimpl
        async def render_outbound(self, model_output: str) -> list[Envelope]:
            raise RuntimeError("renderer down")

    class Guard:
        @hookimpl(wrapper=True)
        def load_state(self) -> Generator[None, Any, Any]:
            states = yield
            seen.append(states)
            return [*states, {"guarded": True}]

        @hookimpl(wrapper=True)
        def render_outbound(self) -> Generator[None, Any, Any]:
            try:
                return (yield)
            except RuntimeError as exc:
                seen.append(str(exc))
                return [Envelope("log", "ops", "rendering failed")]

    for plugin in (Echo(), Loader(), Guard()):
        pipeline.register_plugin(plugin)
    result = pipeline.process_inbound_sync(cell())

    assert seen == [[{"loaded": "notebook:lesson.ipynb"}], "renderer down"]
    assert result.state == {"loaded": "notebook:lesson.ipynb", "guarded": True}
    assert [(o.channel, o.content) for o in result.outbounds] == [("log", "rendering failed")]


@pytest.mark.parametrize("streaming", [False, True], ids=["complete", "stream"])
@pytest.mark.parametrize("model", [Echo, Streamer], ids=["run_model", "run_model_stream"])
def test_the_wrappers_of_the_model_hook_the_caller_asked_for_run_around_the_model_stage(
    streaming: bool, model: type
) -> None:
    """A non-streaming turn calls ``run_model``, a streaming one ``run_model_stream``, whichever hook answers."""
    pipeline = TurnPipeline(entry_points=False)
    wrapped: list[str] = []

    class Loud:
        @hookimpl(wrapper=True)
        def run_model(self) -> Generator[None, Any, Any]:
            text = yield
            wrapped.append("run_model")
            return text.upper()

        @hookimpl(wrapper=True)
        def run_model_stream(self) -> Generator[None, Any, Any]:
            stream = yield
            wrapped.append("run_model_stream")

            async def louder() -> AsyncIterator[StreamEvent]:
                async for event in stream:
                    yield StreamEvent.text(event.data["delta"].upper()) if event.kind == "text" else event

            return louder()

    pipeline.register_plugin(model())
    pipeline.register_plugin(Loud())
    events: list[StreamEvent] = []
    result = pipeline.process_inbound_sync(cell(), on_event=events.append if streaming else None)

    assert wrapped == ["run_model_stream" if streaming else "run_model"]
    assert result.model_output == ("ECHO HI" if model is Echo else "STREAMED HI")
    if streaming:
        assert "".join(e.data["delta"] for e in events) == result.model_output


def test_wrappers_nest_in_marker_order_outside_every_plain_implementation() -> None:
    pipeline = TurnPipeline(entry_points=False)
    order: list[str] = []

    def wrapper(label: str, **marks: bool) -> object:
        class Wrapper:
            @hookimpl(wrapper=True, **marks)
            def save_state(self) -> Generator[None, Any, Any]:
                order.append(f"{label} in")
                result = yield
                order.append(f"{label} out")
                return result

        return Wrapper()

    class Plain:
        @hookimpl(tryfirst=True)
        def save_state(self) -> None:
            order.append("plain")

    pipeline.register_plugin(Echo())
    pipeline.register_plugin(wrapper("outer", tryfirst=True))
    pipeline.register_plugin(Plain())
    pipeline.register_plugin(wrapper("inner", trylast=True))
    pipeline.register_plugin(wrapper("middle"))
    pipeline.process_inbound_sync(cell())

    assert order == ["outer in", "middle in", "inner in", "plain", "inner out", "middle out", "outer out"]


def test_tryfirst_and_trylast_move_an_implementation_whatever_the_registration_order() -> None:
    pipeline = TurnPipeline(entry_points=False)
    order: list[str] = []

    def plugin(label: str, **marks: bool) -> object:
        class Plugin:
            @hookimpl(**marks)
            def load_state(self) -> dict[str, Any]:
                order.append(label)
                return {"winner": label}

            @hookimpl(**marks)
            def build_prompt(self) -> str:
                return f"prompt from {label}"

        return Plugin()

    pipeline.register_plugin(Echo())
    pipeline.register_plugin(plugin("first", tryfirst=True))
    pipeline.register_plugin(plugin("a"))
    pipeline.register_plugin(plugin("b"))
    pipeline.register_plugin(plugin("last", trylast=True))
    result = pipeline.process_inbound_sync(cell())

    assert order == ["first", "b", "a", "last"]
    assert result.state == {"winner": "first"}  # merged lowest priority first, so the first called wins
    assert result.prompt == "prompt from first"


def test_a_trylast_model_loses_to_an_earlier_plugin_and_a_tryfirst_one_wins_over_later_ones() -> None:
    class Late:
        @hookimpl(trylast=True)
        def run_model(self) -> str:
            return "late"

    class Early:
        @hookimpl(tryfirst=True)
        def run_model(self) -> str:
            return "early"

    pipeline = TurnPipeline(entry_points=False)
    pipeline.register_plugin(Echo())
    pipeline.register_plugin(Late())
    assert pipeline.process_inbound_sync(cell()).model_output == "echo hi"
    pipeline.register_plugin(Early(), name="early")
    pipeline.register_plugin(Streamer())
    assert pipeline.process_inbound_sync(cell()).model_output == "early"


class Specs:
    """Two hooks alike but for the spec's firstresult."""

    hookspec = pluggy.HookspecMarker(PROJECT)

    @hookspec(firstresult=True)
    def pick(self, value: int) -> int: ...

    @hookspec
    def gather(self, value: int) -> int: ...


def test_firstresult_comes_from_the_spec() -> None:
    hooks = HookRuntime(Specs)
    asked: list[str] = []

    def plugin(label: str, answer: int | None) -> object:
        class Plugin:
            @hookimpl
            async def pick(self, value: int) -> int | None:
                asked.append(label)
                return None if answer is None else value + answer

            @hookimpl
            def gather(self, value: int) -> int | None:
                return None if answer is None else value + answer

        return Plugin()

    for label, answer in [("one", 1), ("two", 2), ("none", None)]:
        hooks.register(plugin(label, answer), name=label)

    assert hooks.firstresult("pick") and not hooks.firstresult("gather")
    assert hooks.call_sync("gather", value=10) == [12, 11]  # pluggy leaves out None answers
    from bub_nb.agent.eventloop import run_sync

    assert run_sync(hooks.call("pick", value=10)) == 12
    assert asked == ["none", "two"]  # the first non-None answer ends the call


def test_a_wrapper_that_is_not_a_generator_is_refused_at_registration_in_one_line() -> None:
    class NotAGenerator:
        @hookimpl(wrapper=True)
        def save_state(self) -> None:
            pass

    pipeline = TurnPipeline(entry_points=False)
    with pytest.raises(PipelineError) as refused:
        pipeline.register_plugin(NotAGenerator(), name="audit")

    message = str(refused.value)
    assert "\n" not in message and "'audit'" in message and "save_state" in message and "generator" in message
    assert "audit" not in pipeline.plugin_names


def test_a_hook_bub_nb_never_calls_is_refused_at_registration_naming_plugin_and_hook() -> None:
    class BubChannels:
        @hookimpl
        def provide_channels(self) -> list[Any]:
            return []

    pipeline = TurnPipeline(entry_points=False)
    with pytest.raises(
        PipelineError, match=r"^Plugin 'channels' implements Bub's 'provide_channels', which bub_nb does not call"
    ):
        pipeline.register_plugin(BubChannels(), name="channels")
    assert pipeline.plugin_names == []


def test_a_wrapper_that_yields_twice_fails_the_call_naming_it() -> None:
    class Twice:
        @hookimpl(wrapper=True)
        def system_prompt(self) -> Generator[None, Any, Any]:
            yield
            yield

    pipeline = TurnPipeline(BuiltinPlugin, entry_points=False)
    pipeline.register_plugin(Twice(), name="twice")
    with pytest.raises(PipelineError, match="'system_prompt' wrapper of plugin 'twice' yielded twice"):
        pipeline.system_prompt("hi", {})


def test_an_on_error_wrapper_that_raises_silences_no_observer_and_the_turn_error_still_propagates() -> None:
    seen: list[str] = []

    class Failing:
        @hookimpl
        def run_model(self) -> str:
            raise RuntimeError("model down")

    class Observer:
        @hookimpl
        def on_error(self, stage: str) -> None:
            seen.append(stage)

    class Wrapper:
        @hookimpl(wrapper=True)
        def on_error(self) -> Generator[None, Any, Any]:
            yield
            raise ValueError("wrapper broke")

    pipeline = TurnPipeline(entry_points=False)
    for plugin in (Failing(), Observer(), Wrapper()):
        pipeline.register_plugin(plugin)
    with pytest.raises(RuntimeError, match="model down"):
        pipeline.process_inbound_sync(cell())
    assert seen == ["turn"]


def test_an_entry_point_plugin_with_a_hook_bub_nb_never_calls_stops_the_pipeline_naming_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "bub_channels_plugin.py").write_text(
        "from bub_nb.agent.hooks.specs import hookimpl\n@hookimpl\ndef provide_channels():\n    return []\n"
    )
    dist = tmp_path / "bub_channels_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: bub-channels-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[bub_nb]\nchannels = bub_channels_plugin\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    with pytest.raises(
        PipelineError, match=r"^Plugin 'channels' implements Bub's 'provide_channels', which bub_nb does not call"
    ):
        TurnPipeline(BuiltinPlugin)
