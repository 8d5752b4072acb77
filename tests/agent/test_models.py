"""Models: the openai client against the local endpoint, the offline teaching model, scripted replies."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bub_nb.agent.models import (
    Completion,
    Model,
    OfflineModel,
    OpenAIModel,
    ScriptedModel,
    TextDelta,
    ToolCall,
    Usage,
    is_context_length_error,
    resolve_model,
)
from bub_nb.context.tokens import count_messages_tokens
from bub_nb.context.view import build_view
from bub_nb.errors import ContextLengthError, ModelConfigError, ModelError, ToolError
from bub_nb.tape import MemoryTapeStore, open_tape
from bub_nb.testing import OpenAICompatibleServer

HELLO = [{"role": "user", "content": "hello"}]


def tool(name: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"The {name} tool.",
            "parameters": {"type": "object", "properties": {}},
        },
    }


def run_stream(
    model: Model, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
) -> tuple[list[str], Completion]:
    async def collect() -> tuple[list[str], Completion]:
        items = [item async for item in model.stream(messages, tools)]
        assert all(isinstance(item, TextDelta) for item in items[:-1])
        assert isinstance(items[-1], Completion)
        return [item.text for item in items[:-1]], items[-1]

    return asyncio.run(collect())


def run_stream_until_error(model: Model, messages: list[dict[str, Any]]) -> tuple[list[str], BaseException]:
    async def collect() -> tuple[list[str], BaseException]:
        pieces: list[str] = []
        stream: AsyncIterator[TextDelta | Completion] = model.stream(messages)
        try:
            async for item in stream:
                pieces.append(item.text)
        except Exception as exc:
            return pieces, exc
        raise AssertionError(f"the stream ended without an error after {pieces}")

    return asyncio.run(collect())


def complete(model: Model, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> Completion:
    return asyncio.run(model.complete(messages, tools))


def served(server: OpenAICompatibleServer, **options: Any) -> OpenAIModel:
    options.setdefault("api_key", "test-key")
    return OpenAIModel("test-model", base_url=server.base_url, **options)


# -- values --------------------------------------------------------------------------------------


def test_values_convert_to_and_from_the_openai_shapes():
    call = ToolCall("call_1", "memory_save", '{"content": "tea"}')
    assert ToolCall.from_openai(call.to_openai()) == call
    assert call.to_openai() == {
        "id": "call_1",
        "type": "function",
        "function": {"name": "memory_save", "arguments": '{"content": "tea"}'},
    }
    assert call.parse_arguments() == {"content": "tea"}
    assert Usage.from_openai({"prompt_tokens": 7, "completion_tokens": 2}).as_dict() == {
        "prompt_tokens": 7,
        "completion_tokens": 2,
        "total_tokens": 9,
    }
    assert Completion("", (call,)).to_message() == {
        "role": "assistant",
        "content": "",
        "tool_calls": [call.to_openai()],
    }


def test_bad_tool_arguments_name_the_tool_and_the_text():
    with pytest.raises(ToolError, match=r"'memory_save'.*'\{content: tea'"):
        ToolCall("call_1", "memory_save", "{content: tea").parse_arguments()


def test_every_model_satisfies_the_protocol(openai_server):
    for model in (served(openai_server), OfflineModel(), ScriptedModel(["hi"])):
        assert isinstance(model, Model)


# -- OpenAIModel over the local endpoint -----------------------------------------------------------


def test_complete_returns_text_usage_and_the_served_model(openai_server):
    openai_server.reply("The answer.", usage={"prompt_tokens": 12, "completion_tokens": 3})

    completion = complete(served(openai_server), HELLO)

    assert completion == Completion("The answer.", (), Usage(12, 3, 15), "stop", "test-model")
    assert openai_server.last_request["model"] == "test-model"


def test_stream_yields_deltas_then_a_completion_with_usage(openai_server):
    openai_server.reply("Streaming works in pieces.", usage={"prompt_tokens": 5, "completion_tokens": 4})

    pieces, completion = run_stream(served(openai_server), HELLO)

    assert len(pieces) == 4
    assert "".join(pieces) == completion.text == "Streaming works in pieces."
    assert completion.usage == Usage(5, 4, 9)
    assert openai_server.last_request["stream"] is True
    assert openai_server.last_request["stream_options"] == {"include_usage": True}


def test_streamed_tool_calls_are_assembled_by_index(openai_server):
    openai_server.reply_tool_calls(
        [
            {"name": "memory_save", "arguments": {"content": "a fact long enough to come in several deltas"}},
            {"name": "tape_handoff", "arguments": {"name": "phase/2", "summary": "done"}},
        ],
        content="Saving.",
    )

    pieces, completion = run_stream(served(openai_server), HELLO, [tool("memory_save"), tool("tape_handoff")])

    assert "".join(pieces) == completion.text == "Saving."
    assert completion.finish_reason == "tool_calls"
    assert [(c.id, c.name) for c in completion.tool_calls] == [("call_1", "memory_save"), ("call_2", "tape_handoff")]
    assert completion.tool_calls[0].parse_arguments() == {"content": "a fact long enough to come in several deltas"}
    assert completion.tool_calls[1].parse_arguments() == {"name": "phase/2", "summary": "done"}
    assert [t["function"]["name"] for t in openai_server.last_request["tools"]] == ["memory_save", "tape_handoff"]


def test_a_tool_round_trip_is_a_valid_conversation_for_the_endpoint(openai_server):
    openai_server.reply_tool_calls([{"name": "tape_info", "arguments": {}}]).reply("The tape has 3 entries.")
    model = served(openai_server)

    first = complete(model, HELLO, [tool("tape_info")])
    call = first.tool_calls[0]
    follow_up = [*HELLO, first.to_message(), {"role": "tool", "tool_call_id": call.id, "content": "3 entries"}]
    second = complete(model, follow_up, [tool("tape_info")])

    assert second.text == "The tape has 3 entries."
    assert openai_server.last_request["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "3 entries",
    }


def test_a_500_is_retried_by_the_client_until_the_reply_comes(openai_server):
    openai_server.fail(500).fail(503).reply("third time lucky")

    assert complete(served(openai_server, max_retries=2), HELLO).text == "third time lucky"
    assert len(openai_server.requests) == 3


def test_a_500_beyond_the_retries_is_a_model_error_naming_status_and_message(openai_server):
    openai_server.fail(500, "the GPU caught fire")

    with pytest.raises(
        ModelError,
        match=r"'test-model' at http://127\.0\.0\.1:\d+/v1 answered 500: "
        r"the GPU caught fire",
    ) as caught:
        complete(served(openai_server, max_retries=0), HELLO)
    assert type(caught.value) is ModelError


def test_a_429_is_retried_and_then_reported(openai_server):
    openai_server.fail(429).fail(429)

    with pytest.raises(ModelError, match="answered 429: Rate limit reached"):
        complete(served(openai_server, max_retries=1), HELLO)
    assert len(openai_server.requests) == 2


def test_a_slow_endpoint_is_a_model_error_naming_the_timeout(openai_server):
    openai_server.delay(600)  # no answer within the test: only the model's timeout ends the call

    with pytest.raises(ModelError, match=r"timed out: no answer within 0\.2 s"):
        complete(served(openai_server, timeout=0.2, max_retries=0), HELLO)


def test_a_connection_dropped_mid_stream_is_a_model_error_after_the_partial_text(openai_server):
    openai_server.drop_after(3, "the answer was going well until")

    pieces, error = run_stream_until_error(served(openai_server), HELLO)

    assert "".join(pieces) == "the answer was "
    assert isinstance(error, ModelError)
    assert "dropped mid-stream" in str(error)


def test_an_unreachable_endpoint_is_a_model_error_naming_it():
    with OpenAICompatibleServer() as server:
        base_url = server.base_url
    model = OpenAIModel("m", api_key="k", base_url=base_url, max_retries=0)

    with pytest.raises(ModelError, match=f"at {base_url} could not be reached"):
        complete(model, HELLO)


@pytest.mark.parametrize("streaming", [False, True])
def test_context_length_errors_become_context_length_error(openai_server, streaming):
    openai_server.fail_context_length(8192, 9100)
    model = served(openai_server)

    with pytest.raises(ContextLengthError, match="maximum context length is 8192 tokens"):
        if streaming:
            run_stream(model, HELLO)
        else:
            complete(model, HELLO)


def test_an_endpoint_context_window_refuses_a_long_prompt_as_context_length_error():
    long_prompt = [{"role": "user", "content": "many words " * 300}]
    with OpenAICompatibleServer(context_window=100) as server:
        model = served(server)
        with pytest.raises(ContextLengthError):
            complete(model, long_prompt)
        assert complete(model, HELLO).text  # a short prompt still goes through


@pytest.mark.parametrize(
    "message",
    [
        "This model's maximum context length is 8192 tokens.",
        "Prompt too long for this model",
        "Input exceeds the token limit",
        "the request exceeds the available context size, try increasing it",
        "Context Length exceeded",
    ],
)
def test_context_length_patterns_match_case_insensitively(message):
    assert is_context_length_error(message)


def test_other_errors_are_not_context_length_errors():
    assert not is_context_length_error("Rate limit reached")
    assert is_context_length_error("Bad request", code="context_length_exceeded")


def test_the_api_key_never_shows_in_errors_or_repr(openai_server):
    secret = "sk-test-not-a-real-key-0123456789"
    openai_server.fail(401, f"Incorrect API key provided: {secret}.")
    model = served(openai_server, api_key=secret)

    with pytest.raises(ModelError) as caught:
        complete(model, HELLO)

    assert "answered 401" in str(caught.value)
    assert secret not in str(caught.value)
    assert secret not in repr(model)


def test_the_model_works_across_event_loops(openai_server):
    model = served(openai_server)
    openai_server.reply("first loop").reply("second loop")

    assert complete(model, HELLO).text == "first loop"
    assert complete(model, HELLO).text == "second loop"  # a new asyncio.run, a new client


def test_connections_are_closed_when_asyncio_run_ends(openai_server):
    complete(served(openai_server), HELLO)

    assert openai_server.wait_for_open_connections(0, timeout=60)  # the server sees each close; 60 s bounds a hang
    assert openai_server.open_connections == 0


def test_aclose_closes_the_connections_at_once(openai_server):
    model = served(openai_server)

    async def call_then_close() -> int:
        await model.complete(HELLO)
        kept_alive = openai_server.open_connections
        await model.aclose()
        return kept_alive

    assert asyncio.run(call_then_close()) == 1


# -- resolve_model ---------------------------------------------------------------------------------


def test_no_spec_and_no_environment_means_the_offline_model():
    assert isinstance(resolve_model(), OfflineModel)
    assert resolve_model(context_window=500).context_window == 500


def test_bub_model_and_the_key_and_base_variables_configure_an_openai_model(monkeypatch, openai_server):
    monkeypatch.setenv("BUB_MODEL", "openai:qwen2.5:7b")
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("BUB_API_BASE", openai_server.base_url)
    openai_server.reply("configured")

    model = resolve_model(max_retries=0)

    assert isinstance(model, OpenAIModel)
    assert (model.name, model.base_url) == ("openai:qwen2.5:7b", openai_server.base_url)
    assert complete(model, HELLO).text == "configured"
    assert openai_server.last_request["model"] == "qwen2.5:7b"


def test_bubs_provider_spelling_is_the_model_at_the_providers_openai_compatible_endpoint(monkeypatch, openai_server):
    monkeypatch.setenv("BUB_MODEL", "anthropic:claude-test")
    monkeypatch.setenv("BUB_ANTHROPIC_API_BASE", openai_server.base_url)
    monkeypatch.setenv("BUB_ANTHROPIC_API_KEY", "test-key")
    openai_server.reply("through the endpoint")
    model = resolve_model(max_retries=0)
    assert complete(model, HELLO).text == "through the endpoint"
    assert openai_server.last_request["model"] == "claude-test"


def test_openrouter_needs_no_base_it_has_an_openai_compatible_endpoint_of_its_own(monkeypatch):
    monkeypatch.setenv("BUB_MODEL", "openrouter:openrouter/free")
    monkeypatch.setenv("BUB_API_KEY", "test-key")
    model = resolve_model()
    assert (model.model, model.base_url) == ("openrouter/free", "https://openrouter.ai/api/v1")


def test_a_bub_provider_without_an_endpoint_is_refused_in_one_line_naming_bub_model_and_what_to_set(monkeypatch):
    monkeypatch.setenv("BUB_MODEL", "anthropic:claude-sonnet-4")
    with pytest.raises(ModelConfigError) as refused:
        resolve_model()
    line = str(refused.value)
    assert (
        line.startswith("BUB_MODEL='anthropic:claude-sonnet-4' names Bub's provider 'anthropic'") and "\n" not in line
    )
    assert "BUB_ANTHROPIC_API_BASE or BUB_API_BASE" in line and "BUB_NB_MODEL" in line


def test_bub_nb_model_is_read_before_the_setting_shared_with_bub(monkeypatch):
    monkeypatch.setenv("BUB_MODEL", "openai:gpt-4o-mini")
    monkeypatch.setenv("BUB_NB_MODEL", "offline")
    assert isinstance(resolve_model(), OfflineModel)
    monkeypatch.delenv("BUB_NB_MODEL")
    monkeypatch.setenv("BUB_MODEL", "offline")  # the old spelling still reads
    assert isinstance(resolve_model(), OfflineModel)


def test_a_bare_model_name_is_an_openai_model(monkeypatch):
    monkeypatch.setenv("BUB_API_KEY", "test-key")
    model = resolve_model("gpt-4o-mini")
    assert isinstance(model, OpenAIModel)
    assert model.model == "gpt-4o-mini"


def test_a_missing_key_names_the_variables_to_set():
    with pytest.raises(
        ModelConfigError,
        match=r"'openai:gpt-4o-mini' needs an API key.*BUB_API_KEY or "
        r"OPENAI_API_KEY",
    ):
        resolve_model("openai:gpt-4o-mini")


def test_a_local_server_needs_no_key(openai_server, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url.replace("127.0.0.1", "localhost"))

    model = resolve_model("openai:llama3.2")

    assert complete(model, HELLO).text


def test_an_unknown_prefix_lists_the_accepted_forms():
    with pytest.raises(
        ModelConfigError,
        match=r"Unknown model spec 'nonsense:claude'; use 'offline', "
        r"'openai:<model>'",
    ):
        resolve_model("nonsense:claude")


def test_a_model_object_is_used_as_it_is():
    model = ScriptedModel(["hi"])
    assert resolve_model(model) is model


# -- the offline teaching model --------------------------------------------------------------------


def handed_off_view_messages() -> list[dict[str, Any]]:
    tape = open_tape("lesson", store=MemoryTapeStore())
    tape.ensure_bootstrap_anchor()
    tape.append_message({"role": "user", "content": "Load the sales data."})
    tape.append_message({"role": "assistant", "content": "Loaded 1,204 rows."})
    tape.handoff("phase/analysis", {"summary": "Sales data loaded and cleaned."})
    tape.append_message({"role": "user", "content": "Which region grew fastest?"})
    system = {"role": "system", "content": "You are helpful.\n<memory>\n- prefers charts\n</memory>"}
    return [system, *build_view(tape).to_messages()]


def test_offline_model_describes_the_context_it_received():
    messages = handed_off_view_messages()

    text = complete(OfflineModel(), messages).text

    assert text.startswith("[offline teaching model; no language model was called]")
    assert text.splitlines()[1:] == [
        "- I received 3 messages: 1 system, 1 user, 1 assistant.",
        '- The view starts at anchor `phase/analysis`, whose summary is "Sales data loaded and cleaned."',
        "- The system prompt has a `<memory>` block.",
        '- Your last message: "Which region grew fastest?"',
    ]


def test_offline_model_is_deterministic_and_streams_in_word_chunks():
    messages = handed_off_view_messages()

    pieces, completion = run_stream(OfflineModel(), messages)

    assert len(pieces) > 10
    assert "".join(pieces) == completion.text == complete(OfflineModel(), messages).text
    assert completion.model == "offline"
    assert completion.usage is not None
    assert completion.usage.prompt_tokens == count_messages_tokens(messages)


def test_offline_model_without_an_anchor_or_memory_says_so():
    text = complete(OfflineModel(), HELLO).text

    assert "- I received 1 message: 1 user.\n- The view does not start at an anchor." in text
    assert "- There is no system prompt." in text


def test_remember_calls_memory_save_and_the_result_is_reported():
    model = OfflineModel()
    messages = [{"role": "user", "content": "remember: the user prefers bar charts"}]

    first = complete(model, messages, [tool("memory_save"), tool("tape_handoff")])
    assert first.finish_reason == "tool_calls"
    [call] = first.tool_calls
    assert (call.name, call.parse_arguments()) == ("memory_save", {"content": "the user prefers bar charts"})

    result = {"role": "tool", "tool_call_id": call.id, "content": "saved to long-term memory"}
    second = complete(model, [*messages, first.to_message(), result], [tool("memory_save")])

    assert second.tool_calls == ()
    assert 'memory_save returned "saved to long-term memory"' in second.text


def test_handoff_request_calls_tape_handoff_with_name_and_summary():
    messages = [{"role": "user", "content": "handoff phase/report: analysis done, write the report"}]

    completion = complete(OfflineModel(), messages, [tool("tape_handoff")])

    [call] = completion.tool_calls
    assert call.name == "tape_handoff"
    assert call.parse_arguments() == {"name": "phase/report", "summary": "analysis done, write the report"}


def test_a_request_for_a_tool_that_is_not_offered_is_answered_in_text():
    completion = complete(OfflineModel(), [{"role": "user", "content": "remember: tea"}], [tool("tape_info")])

    assert completion.tool_calls == ()
    assert "You asked for `memory_save`, but that tool was not offered" in completion.text
    assert "Tools offered: `tape_info`." in completion.text


def test_offline_context_window_refuses_a_long_prompt():
    long_prompt = [{"role": "user", "content": "word " * 400}]
    tokens = count_messages_tokens(long_prompt)

    with pytest.raises(ContextLengthError, match=f"prompt too long: {tokens} tokens > context window 100"):
        complete(OfflineModel(context_window=100), long_prompt)
    with pytest.raises(ContextLengthError):
        run_stream(OfflineModel(context_window=100), long_prompt)
    assert is_context_length_error(f"prompt too long: {tokens} tokens > context window 100")


# -- the scripted model ----------------------------------------------------------------------------


def test_scripted_model_replays_text_and_tool_calls_in_order_and_records_requests():
    model = ScriptedModel(
        [
            {"tool_calls": [{"name": "tape_search", "arguments": {"query": "tea"}}]},
            "Found it.",
        ]
    )
    tools = [tool("tape_search")]

    first = complete(model, HELLO, tools)
    pieces, second = run_stream(
        model, [*HELLO, first.to_message(), {"role": "tool", "tool_call_id": first.tool_calls[0].id, "content": "1"}]
    )

    assert first.tool_calls[0].name == "tape_search"
    assert json.loads(first.tool_calls[0].arguments) == {"query": "tea"}
    assert "".join(pieces) == second.text == "Found it."
    assert [r.tool_names for r in model.requests] == [["tape_search"], []]
    assert model.requests[1].messages[-1]["role"] == "tool"
    assert model.remaining == 0


def test_scripted_model_raises_scripted_exceptions():
    model = ScriptedModel([ContextLengthError("prompt too long: scripted"), ModelError, "after"])

    with pytest.raises(ContextLengthError, match="scripted"):
        complete(model, HELLO)
    with pytest.raises(ModelError, match="scripted ModelError from ScriptedModel 'scripted'"):
        complete(model, HELLO)
    assert complete(model, HELLO).text == "after"


def test_scripted_model_says_when_it_runs_out_of_replies():
    model = ScriptedModel(["only one"], name="lesson-1")
    complete(model, HELLO)

    with pytest.raises(
        ModelError, match="ScriptedModel 'lesson-1' ran out of replies: it was given 1 and asked for a 2nd"
    ):
        complete(model, HELLO)


def test_scripted_context_window_refuses_without_using_a_reply():
    model = ScriptedModel(["short answer"], context_window=50)

    with pytest.raises(ContextLengthError, match="context window 50"):
        complete(model, [{"role": "user", "content": "word " * 100}])

    assert complete(model, HELLO).text == "short answer"
    assert len(model.requests) == 2


def test_scripted_usage_is_reported_when_given():
    model = ScriptedModel([{"content": "hi", "usage": {"prompt_tokens": 100, "completion_tokens": 1}}])

    assert complete(model, HELLO).usage == Usage(100, 1, 101)


def test_the_local_model_base_cannot_be_made_without_an_answer() -> None:
    from bub_nb.agent.models.base import LocalModel

    with pytest.raises(TypeError, match=r"abstract methods? '?answer"):
        LocalModel()  # type: ignore[abstract]
