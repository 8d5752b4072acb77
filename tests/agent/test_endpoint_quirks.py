"""What real OpenAI-compatible servers do that OpenAI does not, replayed byte for byte by the local test server."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from harness.shell import Notebook
from hypothesis import given
from hypothesis import strategies as st
from IPython.core.error import UsageError

from bub_nb.agent import Agent
from bub_nb.agent.eventloop import run_sync
from bub_nb.agent.models import OpenAIModel
from bub_nb.agent.models.calibration import TokenScale
from bub_nb.agent.models.refusals import read_refusal
from bub_nb.agent.summaries.summarize import FALLBACK
from bub_nb.context.tokens import count_messages_tokens
from bub_nb.errors import BubNbError, ContextLengthError, ModelError
from bub_nb.tape import MemoryTapeStore, Tape
from bub_nb.testing import OpenAICompatibleServer

# llama.cpp's llama-server, a request over its window (its exact body).
LLAMA_SERVER_OVERFLOW = {
    "error": {
        "code": 400,
        "message": "request (452 tokens) exceeds the available context size (256 tokens), try increasing it",
        "type": "exceed_context_size_error",
        "n_prompt_tokens": 452,
        "n_ctx": 256,
    }
}
# llama-cpp-python's server, not streaming, no max_tokens sent (its ErrorResponseFormatters.context_length_exceeded).
LLAMA_CPP_PYTHON_OVERFLOW = {
    "error": {
        "message": "This model's maximum context length is 512 tokens. However, you requested 700 tokens "
        "(700 in the messages, None in the completion). Please reduce the length of the messages or completion.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}
# vLLM's OpenAI server, as its documentation and source word an overflow (older and newer releases).
VLLM_OVERFLOWS = (
    {
        "object": "error",
        "message": "This model's maximum context length is 2048 tokens. However, you requested 2100 tokens "
        "(2000 in the messages, 100 in the completion). Please reduce the length of the messages or completion.",
        "type": "BadRequestError",
        "param": None,
        "code": 400,
    },
    {
        "error": {
            "message": "The decoder prompt (length 5000) is longer than the maximum model length of 4096. "
            "Make sure that `max_model_len` is no smaller than the number of text tokens.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        }
    },
)
OPENAI_OVERFLOW = {
    "error": {
        "message": "This model's maximum context length is 8192 tokens. However, your messages resulted in "
        "9000 tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}


@pytest.fixture
def endpoint(openai_server: OpenAICompatibleServer) -> Iterator[OpenAIModel]:
    model = OpenAIModel("tiny", base_url=openai_server.base_url, api_key="test", timeout=5, max_retries=2)
    yield model
    run_sync(model.aclose())


def long_tape(turns: int = 6) -> Tape:
    tape = Tape("long", MemoryTapeStore())
    tape.ensure_bootstrap_anchor()
    for number in range(turns):
        tape.append_message({"role": "user", "content": f"Part {number}: " + "a long paragraph about tapes " * 30})
        tape.append_message({"role": "assistant", "content": f"Noted part {number}."})
    return tape


# -- 1. the window, from every wording ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "window"),
    [
        (LLAMA_SERVER_OVERFLOW, 256),
        (LLAMA_CPP_PYTHON_OVERFLOW, 512),
        (VLLM_OVERFLOWS[0], 2048),
        (VLLM_OVERFLOWS[1], 4096),
        (OPENAI_OVERFLOW, 8192),
    ],
    ids=["llama-server", "llama-cpp-python", "vllm", "vllm-newer", "openai"],
)
def test_the_window_is_learned_from_each_servers_overflow(
    openai_server: OpenAICompatibleServer, endpoint: OpenAIModel, body: dict[str, Any], window: int
) -> None:
    openai_server.refuse(400, body)
    with pytest.raises(ContextLengthError):
        run_sync(endpoint.complete([{"role": "user", "content": "Hello"}]))
    assert endpoint.context_window == window
    assert len(openai_server.requests) == 1  # a 400 is not retried


def test_llama_servers_count_of_the_refused_prompt_calibrates_the_estimates(
    openai_server: OpenAICompatibleServer, endpoint: OpenAIModel
) -> None:
    messages = [{"role": "user", "content": "word " * 100}]
    openai_server.refuse(400, LLAMA_SERVER_OVERFLOW)
    with pytest.raises(ContextLengthError):
        run_sync(endpoint.complete(messages))
    assert endpoint.token_scale.ratio == pytest.approx(452 / count_messages_tokens(messages))


def test_the_scale_is_the_highest_of_the_latest_ratios() -> None:
    scale = TokenScale()
    scale.observe(100, 400)
    scale.observe(100, 80)
    assert scale.ratio == 4.0 and scale.scaled(10) == 40
    for _ in range(16):
        scale.observe(100, 200)
    assert scale.ratio == 2.0  # the oldest ratios are forgotten


# -- 2. an empty 200 stream -----------------------------------------------------------------------------------


def test_an_empty_stream_is_asked_again_without_streaming_and_its_overflow_hands_off(
    openai_server: OpenAICompatibleServer, endpoint: OpenAIModel
) -> None:
    tape = long_tape()
    openai_server.empty_stream().refuse(400, LLAMA_CPP_PYTHON_OVERFLOW)
    openai_server.default_text = "Summary:\nSix parts about tapes [#6]."  # the summary, in parts, then the answer
    turn = Agent(tape, endpoint).run("What next?", stream=True)

    assert turn.ok and turn.text == openai_server.default_text
    streamed, again = openai_server.requests[:2]
    assert streamed["stream"] is True and "stream" not in again
    assert [e.name for e in turn.entries if e.kind == "anchor"] == ["auto_handoff/context_overflow"]
    assert endpoint.context_window == 512


def test_an_empty_stream_then_an_answer_is_the_answer(
    openai_server: OpenAICompatibleServer, endpoint: OpenAIModel
) -> None:
    openai_server.empty_stream().reply("Here it is.")
    deltas: list[str] = []
    turn = Agent(long_tape(1), endpoint).run("Go", on_delta=deltas.append)
    assert turn.ok and "".join(deltas) == "Here it is." and len(openai_server.requests) == 2


def test_an_answer_holding_a_lone_surrogate_does_not_break_the_turns_after_it(
    openai_server: OpenAICompatibleServer, endpoint: OpenAIModel
) -> None:
    # JSON may escape half a surrogate pair ("\\ud800"); the tape keeps it, and the next request must still go out.
    openai_server.reply("\ud800 lone surrogate").reply_tool_calls(
        [{"name": "tape_search", "arguments": {"query": "\udfff"}}]
    )
    agent = Agent(long_tape(1), endpoint)
    assert agent.run("Go").ok
    assert agent.run("Again").ok
    sent = json.dumps(openai_server.requests[1:], ensure_ascii=False)
    assert "\ufffd lone surrogate" in sent and "\ud800" not in sent and "\udfff" not in sent
    assert any(entry.payload.get("content") == "\ud800 lone surrogate" for entry in agent.tape.read())


# -- 3. streams without usage ---------------------------------------------------------------------------------


def test_a_stream_without_usage_is_estimated_and_usage_says_how_many_turns_were(
    openai_server: OpenAICompatibleServer, endpoint: OpenAIModel
) -> None:
    tape = long_tape(1)
    agent = Agent(tape, endpoint)
    openai_server.reply("Counted by the server.", usage={"prompt_tokens": 900, "completion_tokens": 5})
    agent.run("First", stream=True)
    openai_server.reply("Not counted by anyone.", stream_usage=False)
    turn = agent.run("Second", stream=True)

    assert turn.usage is not None and turn.usage.estimated and turn.usage.prompt_tokens > 0
    run = tape.read(kinds=("event",))[-1]
    assert run.payload["data"]["usage"]["estimated"] is True
    table = tape.to_frame().tape.usage()
    assert table["turns"].sum() == 2 and table["estimated"].sum() == 1
    assert table["tokens_in"].sum() > 900


# -- 4. summaries that cite nothing ---------------------------------------------------------------------------


def test_a_summary_that_cites_nothing_is_refused_and_writes_nothing(
    openai_server: OpenAICompatibleServer, endpoint: OpenAIModel
) -> None:
    tape = long_tape(2)
    before = len(tape)
    openai_server.reply("6x/opQr")
    with pytest.raises(BubNbError, match=r"cites no entry of #1-#6 \('6x/opQr'\); nothing was written"):
        Agent(tape, endpoint).handoff("phase/x", summarize=True)
    assert len(tape) == before


def test_an_overflow_summary_that_cites_nothing_gives_way_to_the_extractive_one(
    openai_server: OpenAICompatibleServer, endpoint: OpenAIModel
) -> None:
    tape = long_tape()
    openai_server.refuse(400, OPENAI_OVERFLOW)
    openai_server.default_text = "6x/opQr"  # every summarizing request, in parts or whole, and then the answer
    turn = Agent(tape, endpoint).run("What next?")
    assert turn.ok
    state = tape.find_anchor("auto_handoff/context_overflow").state
    assert state is not None and state["summarized_by"] == FALLBACK
    assert "because the model's summary failed" in turn.notices[0] and "cites no entry" in turn.notices[0]


# -- 5. the overflow's notice and size ------------------------------------------------------------------------


def test_the_cell_says_what_an_overflow_wrote_even_when_the_retry_fails(
    nb: Notebook, openai_server: OpenAICompatibleServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BUB_API_BASE", openai_server.base_url)
    nb.run("%%bub -m openai:tiny\n" + "A long paragraph about tapes. " * 40)
    # The window alone: the scripted counts would not match what the local server counts of these requests.
    refusal = {
        "error": {"message": "This model's maximum context length is 8192 tokens.", "code": "context_length_exceeded"}
    }
    openai_server.refuse(400, refusal).reply("Summary:\nTapes [#3].").refuse(400, refusal)
    with pytest.raises(UsageError, match="maximum context length is 8192"):
        nb.run("%%bub -m openai:tiny\nWhat next?")
    assert "Warning: The prompt did not fit the model's context: handoff auto_handoff/context_overflow #" in nb.shown()


def test_the_retry_after_an_overflow_is_smaller_than_the_request_that_overflowed(
    openai_server: OpenAICompatibleServer, endpoint: OpenAIModel
) -> None:
    tape = long_tape(3)
    openai_server.refuse(400, LLAMA_SERVER_OVERFLOW)
    openai_server.reply("Summary:\n" + "".join(f"Part {n} was long [#{n * 2 + 2}].\n" for n in range(3)))
    openai_server.reply("Recovered.")
    endpoint.token_scale.observe(100, 100)  # the server's counts agree with the estimate
    turn = Agent(tape, endpoint).run("What next?")
    overflowed, retried = openai_server.requests[0], openai_server.requests[-1]
    assert turn.ok
    assert count_messages_tokens(retried["messages"]) < count_messages_tokens(overflowed["messages"])
    state = json.loads(retried["messages"][1]["content"].split("]: ", 1)[1])
    assert len(state["error"]) <= 160 and state["reason"] == "context_length_exceeded"
    assert state["error"].startswith("request (452 tokens) exceeds")  # the refusal, not which endpoint said it


# -- 6 and 8. server errors the same request always gets ------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "advice"),
    [("tools param requires --jinja flag", "--tools none"), ("llama_decode returned 1", "--ctx-size")],
)
def test_a_lasting_server_error_is_not_retried_and_comes_with_advice(
    openai_server: OpenAICompatibleServer, endpoint: OpenAIModel, message: str, advice: str
) -> None:
    openai_server.fail(500, message)
    with pytest.raises(ModelError, match=f"{message}.*not retried.*{advice}") as caught:
        Agent(long_tape(1), endpoint).run("Go")
    assert len(openai_server.requests) == 1
    assert "\n" not in str(caught.value)


def test_a_passing_server_error_is_still_retried(openai_server: OpenAICompatibleServer, endpoint: OpenAIModel) -> None:
    openai_server.fail(500, "The server had an error").reply("Fine now.")
    assert Agent(long_tape(1), endpoint).run("Go").text == "Fine now."
    assert len(openai_server.requests) == 2


def test_max_tokens_is_bounded_by_the_learned_window(
    openai_server: OpenAICompatibleServer, endpoint: OpenAIModel
) -> None:
    assert "max_tokens" not in _sent(openai_server, endpoint)  # the window is not known yet
    endpoint.context_window = 2000
    sent = _sent(openai_server, endpoint)
    assert sent["max_tokens"] == 2000 - count_messages_tokens(sent["messages"])


def test_openai_itself_is_sent_max_completion_tokens(openai_server: OpenAICompatibleServer) -> None:
    model = OpenAIModel("tiny", api_key="test", timeout=5)
    model.context_window = 2000
    request = model._request([{"role": "user", "content": "Hello"}], None)
    assert "max_tokens" not in request and 0 < request["max_completion_tokens"] < 2000


def test_a_turn_waiting_on_pings_stops_when_interrupted(openai_server: OpenAICompatibleServer) -> None:
    model = OpenAIModel("tiny", base_url=openai_server.base_url, api_key="test", timeout=30, total_timeout=60)
    agent = Agent(long_tape(1), model)
    openai_server.ping_only(every=0.1)

    def abort_once_the_request_arrived() -> None:  # an event, not a delay: the turn is waiting on pings by then
        while not openai_server.requests:
            time.sleep(0.01)
        agent.abort()

    threading.Thread(target=abort_once_the_request_arrived, daemon=True).start()
    turn = agent.run("Go", stream=True)
    assert turn.status == "interrupted"  # the 60 s total_timeout would have ended it as an error instead
    run_sync(model.aclose())


def _sent(server: OpenAICompatibleServer, model: OpenAIModel) -> Any:
    run_sync(model.complete([{"role": "user", "content": "Hello there"}]))
    return server.last_request


# -- 7. keep-alive comments and the total time limit ----------------------------------------------------------


def test_ping_comments_cannot_keep_a_call_open_past_its_total_time(openai_server: OpenAICompatibleServer) -> None:
    model = OpenAIModel("tiny", base_url=openai_server.base_url, api_key="test", timeout=1, total_timeout=1.5)
    openai_server.ping_only(every=0.1)
    with pytest.raises(ModelError, match=r"no complete answer within 1.5 s \(total_timeout\)"):
        Agent(long_tape(1), model).run("Go", stream=True)
    run_sync(model.aclose())


# -- 9. calibrated estimates ----------------------------------------------------------------------------------


def test_the_servers_prompt_counts_scale_the_estimates_that_guard_the_window(
    openai_server: OpenAICompatibleServer, endpoint: OpenAIModel
) -> None:
    tape = long_tape(0)
    agent = Agent(tape, endpoint)
    estimate = count_messages_tokens(
        [{"role": "system", "content": agent.system_prompt("Hi")}, {"role": "user", "content": "Hi"}]
    )
    openai_server.reply("Hello.", usage={"prompt_tokens": estimate * 4, "completion_tokens": 2})
    agent.run("Hi")
    assert 3.5 < endpoint.token_scale.ratio < 4.5
    endpoint.context_window = estimate * 2  # fits the offline estimate, not the server's count
    with pytest.raises(ContextLengthError, match="prompt alone"):
        agent.run("Hi")
    assert len(openai_server.requests) == 1


# -- every wording, any numbers -------------------------------------------------------------------------------

WORDINGS = (
    "request ({sent} tokens) exceeds the available context size ({window} tokens), try increasing it",
    "This model's maximum context length is {window} tokens. However, your messages resulted in {sent} tokens.",
    "This model's maximum context length is {window} tokens. However, you requested {sent} tokens "
    "({sent} in the messages, None in the completion). Please reduce the length of the messages or completion.",
    "The decoder prompt (length {sent}) is longer than the maximum model length of {window}.",
)


@given(
    wording=st.sampled_from(WORDINGS),
    window=st.integers(min_value=1, max_value=10**7),
    extra=st.integers(min_value=1, max_value=10**6),
)
def test_each_wording_names_its_window_and_count_whatever_the_numbers(wording: str, window: int, extra: int) -> None:
    refusal = read_refusal({"error": {"message": wording.format(window=window, sent=window + extra)}}, "")
    assert refusal.context_length and (refusal.window, refusal.sent) == (window, window + extra)
