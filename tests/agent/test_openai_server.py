"""The local OpenAI-compatible endpoint speaks the wire format the real openai client expects."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from bub_nb.context.tokens import count_messages_tokens
from bub_nb.testing import DEFAULT_TEXT, OpenAICompatibleServer
from bub_nb.testing.server import RETRY_AFTER

HELLO = [{"role": "user", "content": "hello"}]


@pytest.fixture
def client(openai_server: OpenAICompatibleServer) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(api_key="test-key", base_url=openai_server.base_url, max_retries=0, timeout=5) as client:
        yield client


def endpoint_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("bub-nb-test-endpoint")]


def test_plain_reply_carries_text_and_the_scripted_usage(openai_server, client):
    openai_server.reply("Hello from the script.", usage={"prompt_tokens": 11, "completion_tokens": 4})

    response = client.chat.completions.create(model="m", messages=HELLO)

    assert response.choices[0].message.content == "Hello from the script."
    assert response.choices[0].finish_reason == "stop"
    assert (response.usage.prompt_tokens, response.usage.completion_tokens, response.usage.total_tokens) == (11, 4, 15)
    assert openai_server.last_request["messages"] == HELLO


def test_streamed_text_arrives_word_by_word_with_usage_last(openai_server, client):
    openai_server.reply("one two three four")

    chunks = list(
        client.chat.completions.create(model="m", messages=HELLO, stream=True, stream_options={"include_usage": True})
    )

    pieces = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert pieces == ["one ", "two ", "three ", "four"]
    assert chunks[-1].choices == []
    assert chunks[-1].usage.prompt_tokens == count_messages_tokens(HELLO)
    assert all(c.usage is None for c in chunks[:-1])


def test_stream_without_include_usage_sends_no_usage_chunk(openai_server, client):
    openai_server.reply("just text")

    chunks = list(client.chat.completions.create(model="m", messages=HELLO, stream=True))

    assert all(c.usage is None for c in chunks)
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_tool_calls_stream_as_indexed_deltas(openai_server, client):
    openai_server.reply_tool_calls(
        [
            {"name": "memory_save", "arguments": {"content": "the user drinks green tea every morning"}},
            {"name": "tape_info", "arguments": {}, "id": "call_given"},
        ]
    )

    chunks = list(client.chat.completions.create(model="m", messages=HELLO, stream=True))

    deltas = [d for c in chunks for d in c.choices[0].delta.tool_calls or ()]
    firsts = [d for d in deltas if d.id]
    assert [(d.index, d.id, d.function.name) for d in firsts] == [
        (0, "call_1", "memory_save"),
        (1, "call_given", "tape_info"),
    ]
    arguments = "".join(d.function.arguments for d in deltas if d.index == 0)
    assert len([d for d in deltas if d.index == 0]) > 2
    assert json.loads(arguments) == {"content": "the user drinks green tea every morning"}
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_tool_call_reply_without_streaming(openai_server, client):
    openai_server.reply_tool_calls([{"name": "tape_search", "arguments": '{"query": "tea"}'}], content="Looking.")

    message = client.chat.completions.create(model="m", messages=HELLO).choices[0].message

    assert message.content == "Looking."
    assert [(c.function.name, c.function.arguments) for c in message.tool_calls] == [
        ("tape_search", '{"query": "tea"}')
    ]


def test_an_empty_script_answers_with_the_default_text(openai_server, client):
    response = client.chat.completions.create(model="m", messages=HELLO)

    assert response.choices[0].message.content == DEFAULT_TEXT
    assert response.usage.prompt_tokens == count_messages_tokens(HELLO)


def test_replies_are_served_in_script_order(openai_server, client):
    openai_server.reply("first").reply("second")

    answers = [client.chat.completions.create(model="m", messages=HELLO).choices[0].message.content for _ in range(3)]

    assert answers == ["first", "second", DEFAULT_TEXT]
    assert openai_server.pending == 0


def test_dropped_replies_are_never_served(openai_server, client):
    openai_server.reply("first").reply("second").reply("third")
    assert client.chat.completions.create(model="m", messages=HELLO).choices[0].message.content == "first"

    assert openai_server.drop_pending() == 2 and openai_server.pending == 0
    assert client.chat.completions.create(model="m", messages=HELLO).choices[0].message.content == DEFAULT_TEXT


def test_5xx_faults_are_retried_by_the_client_after_the_short_retry_after(openai_server, monkeypatch):
    openai_server.fail(500).fail(503).reply("recovered")

    with openai.OpenAI(api_key="k", base_url=openai_server.base_url, max_retries=2) as retrying:
        waits: list[float] = []
        own_timeout = retrying._calculate_retry_timeout

        def recorded(*args: Any, **kwargs: Any) -> float:
            waits.append(own_timeout(*args, **kwargs))
            return waits[-1]

        monkeypatch.setattr(retrying, "_calculate_retry_timeout", recorded)
        response = retrying.chat.completions.create(model="m", messages=HELLO)

    assert response.choices[0].message.content == "recovered"
    assert len(openai_server.requests) == 3
    assert waits == [RETRY_AFTER, RETRY_AFTER]  # the client's own backoff would wait 0.5 s and up


def test_429_carries_retry_after_and_an_openai_error_body(openai_server, client):
    openai_server.fail(429, retry_after=3)

    with pytest.raises(openai.RateLimitError) as caught:
        client.chat.completions.create(model="m", messages=HELLO)

    assert caught.value.response.headers["retry-after"] == "3"
    assert caught.value.response.headers["retry-after-ms"] == "3000"
    assert caught.value.code == "rate_limit_exceeded"
    assert "Rate limit" in caught.value.body["message"]


def test_context_window_refuses_long_prompts_without_using_the_script():
    with (
        OpenAICompatibleServer(context_window=40) as server,
        openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0) as client,
    ):
        server.reply("fits")
        long_prompt = [{"role": "user", "content": "word " * 200}]

        with pytest.raises(openai.BadRequestError) as caught:
            client.chat.completions.create(model="m", messages=long_prompt)
        assert caught.value.code == "context_length_exceeded"
        assert "maximum context length is 40 tokens" in caught.value.body["message"]
        assert f"{count_messages_tokens(long_prompt)} tokens" in caught.value.body["message"]
        assert server.pending == 1

        assert client.chat.completions.create(model="m", messages=HELLO).choices[0].message.content == "fits"


def test_the_context_window_can_shrink_while_serving(openai_server, client):
    openai_server.context_window = 5

    with pytest.raises(openai.BadRequestError, match="maximum context length is 5 tokens"):
        client.chat.completions.create(model="m", messages=HELLO)

    openai_server.context_window = None
    assert client.chat.completions.create(model="m", messages=HELLO).choices[0].message.content == DEFAULT_TEXT


def test_chunk_delay_paces_a_stream(openai_server, client):
    openai_server.reply("slow and steady words", chunk_delay=0.05)
    arrivals: list[float] = []

    for chunk in client.chat.completions.create(model="m", messages=HELLO, stream=True):
        if chunk.choices and chunk.choices[0].delta.content:
            arrivals.append(time.perf_counter())

    assert len(arrivals) == 4
    assert arrivals[-1] - arrivals[0] >= 0.1


def test_scripted_context_length_error_looks_like_openai(openai_server, client):
    openai_server.fail_context_length(8192, 9100)

    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="m", messages=HELLO)

    assert caught.value.code == "context_length_exceeded"
    assert caught.value.body["message"].startswith("This model's maximum context length is 8192 tokens")


def test_a_delayed_reply_trips_the_client_timeout(openai_server, client):
    openai_server.delay(600)  # no answer within the test: only the client's own timeout ends the call

    with pytest.raises(openai.APITimeoutError):
        client.with_options(timeout=0.2).chat.completions.create(model="m", messages=HELLO)


def test_a_dropped_stream_ends_in_a_connection_error_after_the_first_chunks(openai_server, client):
    openai_server.drop_after(2, "alpha beta gamma delta")
    received: list[str] = []

    with pytest.raises(openai.APIConnectionError):
        for chunk in client.chat.completions.create(model="m", messages=HELLO, stream=True):
            received.append(chunk.choices[0].delta.content or "")

    assert "".join(received) == "alpha beta "


def test_a_dropped_plain_response_is_a_connection_error(openai_server, client):
    openai_server.drop_after(1, "never whole")

    with pytest.raises(openai.APIConnectionError):
        client.chat.completions.create(model="m", messages=HELLO)


def test_requests_that_openai_would_refuse_get_a_400(openai_server, client):
    orphan = [{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "call_9", "content": "x"}]
    unanswered = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
        },
        {"role": "user", "content": "and?"},
    ]
    dotted = [{"type": "function", "function": {"name": "tape.info", "parameters": {"type": "object"}}}]

    for messages, tools, expected in [
        (orphan, None, "'call_9'"),
        (unanswered, None, "call_1"),
        (HELLO, dotted, "'tape.info'"),
    ]:
        with pytest.raises(openai.BadRequestError) as caught:
            client.chat.completions.create(model="m", messages=messages, tools=tools or openai.omit)
        assert expected in caught.value.body["message"]
    assert len(openai_server.requests) == 3


def test_models_are_listed(openai_server, client):
    assert [m.id for m in client.models.list()] == ["bub-nb-test"]


def test_concurrent_requests_are_all_recorded_and_each_reply_is_used_once(openai_server):
    for n in range(8):
        openai_server.reply(f"reply {n}")
    answers: list[str] = []

    def ask(n: int) -> None:
        with openai.OpenAI(api_key="k", base_url=openai_server.base_url, max_retries=0) as own:
            answers.append(
                own.chat.completions.create(model="m", messages=[{"role": "user", "content": f"q{n}"}])
                .choices[0]
                .message.content
            )

    threads = [threading.Thread(target=ask, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(answers) == [f"reply {n}" for n in range(8)]
    assert sorted(r["messages"][0]["content"] for r in openai_server.requests) == [f"q{n}" for n in range(8)]


def test_stop_closes_kept_alive_connections_and_joins_every_thread():
    server = OpenAICompatibleServer().start()
    client = openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0)
    client.chat.completions.create(model="m", messages=HELLO)  # leaves a kept-alive connection open
    server.delay(600)  # a reply that never comes: stop() must cut it off, not wait for it
    outcome: list[BaseException] = []

    def wait_for_the_delayed_reply() -> None:
        try:
            client.chat.completions.create(model="m", messages=HELLO)
        except openai.APIError as exc:
            outcome.append(exc)

    waiting = threading.Thread(target=wait_for_the_delayed_reply)
    waiting.start()
    while server.pending:
        time.sleep(0.01)

    server.stop()

    assert endpoint_threads() == []
    waiting.join(timeout=60)  # bounds a hang only
    assert [type(exc) for exc in outcome] == [openai.APIConnectionError]  # cut off, not left hanging
    client.close()
