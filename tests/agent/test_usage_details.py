"""Cached and reasoning tokens from the endpoint's response, through the real openai client, into the ``run`` event,
the frames, the OpenTelemetry spans and the ATIF trajectory."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from bub_nb.agent import Agent, OpenAIModel
from bub_nb.agent.models.base import Usage
from bub_nb.export import atif, tape_spans
from bub_nb.export import genai as g
from bub_nb.tape import Tape
from bub_nb.testing import OpenAICompatibleServer

ANSWER = {
    "prompt_tokens": 120,
    "completion_tokens": 30,
    "total_tokens": 150,
    "prompt_tokens_details": {"cached_tokens": 96, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 22, "accepted_prediction_tokens": 0},
}
"""A usage as OpenAI words it, every count given: what the run event must keep."""


def test_the_local_endpoint_reports_cached_and_reasoning_tokens_where_openai_does(
    openai_server: OpenAICompatibleServer,
) -> None:
    openai_server.reply("a", usage={"prompt_tokens": 40, "completion_tokens": 9, "cached_tokens": 32})
    openai_server.reply("b", usage={"prompt_tokens": 40, "completion_tokens": 9, "reasoning_tokens": 4})
    with openai.OpenAI(api_key="k", base_url=openai_server.base_url, max_retries=0) as client:
        plain = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        chunks = list(
            client.chat.completions.create(
                model="m",
                messages=[{"role": "user", "content": "hi"}],
                stream=True,
                stream_options={"include_usage": True},
            )
        )
    assert plain.usage is not None and plain.usage.prompt_tokens_details is not None
    assert plain.usage.prompt_tokens_details.cached_tokens == 32
    streamed = chunks[-1].usage
    assert streamed is not None and streamed.completion_tokens_details is not None
    assert streamed.completion_tokens_details.reasoning_tokens == 4


@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
def test_a_turn_keeps_every_count_the_endpoint_gave(
    openai_server: OpenAICompatibleServer, tape: Tape, model: OpenAIModel, stream: bool
) -> None:
    openai_server.reply("Cached.", usage=ANSWER)
    agent = Agent(tape, model)
    if stream:
        list(agent.stream("Tell me"))
        turn = agent.last_turn
    else:
        turn = agent.run("Tell me")

    assert turn is not None and turn.usage is not None
    assert (turn.usage.cached_tokens, turn.usage.reasoning_tokens) == (96, 22)
    assert turn.entries[-1].payload["data"]["usage"] == ANSWER
    assert tape.info().last_usage == ANSWER


def test_a_turn_of_several_calls_sums_their_details(
    openai_server: OpenAICompatibleServer, tape: Tape, model: OpenAIModel
) -> None:
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    openai_server.reply_tool_calls(
        [{"name": "add", "arguments": {"a": 1, "b": 2}}],
        usage={"prompt_tokens": 50, "completion_tokens": 8, "cached_tokens": 40, "reasoning_tokens": 5},
    )
    openai_server.reply("3", usage={"prompt_tokens": 70, "completion_tokens": 2, "cached_tokens": 48})
    turn = Agent(tape, model, tools=[add]).run("Add 1 and 2")

    usage = turn.entries[-1].payload["data"]["usage"]
    assert (usage["prompt_tokens"], usage["completion_tokens"]) == (120, 10)
    assert usage["prompt_tokens_details"] == {"cached_tokens": 88}
    assert usage["completion_tokens_details"] == {"reasoning_tokens": 5}


def two_turns(openai_server: OpenAICompatibleServer, tape: Tape, model: OpenAIModel) -> None:
    openai_server.reply("One.", usage=ANSWER)
    openai_server.reply("Two.", usage={"prompt_tokens": 200, "completion_tokens": 5, "cached_tokens": 150})
    agent = Agent(tape, model)
    agent.run("First")
    list(agent.stream("Second"))


def test_runs_and_usage_frames_count_cached_and_reasoning_tokens(
    openai_server: OpenAICompatibleServer, tape: Tape, model: OpenAIModel
) -> None:
    two_turns(openai_server, tape, model)
    frame = tape.to_frame()

    runs = frame.tape.runs()
    assert runs["cached_tokens"].tolist() == [96, 150]
    assert runs["reasoning_tokens"].fillna(-1).tolist() == [22, -1]  # the second endpoint reported none
    usage = frame.tape.usage(by="model")
    assert usage[["tokens_in", "cached_tokens", "reasoning_tokens"]].to_dict("records") == [
        {"tokens_in": 320, "cached_tokens": 246, "reasoning_tokens": 22}
    ]


def test_spans_carry_cache_reads_and_reasoning_tokens_on_the_answering_call(
    openai_server: OpenAICompatibleServer, tape: Tape, model: OpenAIModel
) -> None:
    two_turns(openai_server, tape, model)
    chats = [s for s in tape_spans(tape.name, tape.read()).spans if s.attributes[g.OPERATION] == g.CHAT]

    found = [
        (s.attributes[g.INPUT_TOKENS], s.attributes[g.CACHE_READ_TOKENS], s.attributes.get(g.REASONING_TOKENS))
        for s in chats
    ]
    assert found == [(120, 96, 22), (200, 150, None)]
    assert g.CACHE_READ_TOKENS == "gen_ai.usage.cache_read.input_tokens"
    assert g.REASONING_TOKENS == "gen_ai.usage.reasoning.output_tokens"


def test_atif_metrics_hold_the_cached_tokens_of_each_turn_and_in_all(
    openai_server: OpenAICompatibleServer, tape: Tape, model: OpenAIModel
) -> None:
    two_turns(openai_server, tape, model)
    trajectory: dict[str, Any] = atif(tape)

    metrics = [step["metrics"] for step in trajectory["steps"] if "metrics" in step]
    assert [m["cached_tokens"] for m in metrics] == [96, 150]
    assert [m["extra"]["bub"].get("reasoning_tokens") for m in metrics] == [22, None]
    final = trajectory["final_metrics"]
    assert (final["total_prompt_tokens"], final["total_cached_tokens"]) == (320, 246)
    assert final["extra"]["bub"]["total_reasoning_tokens"] == 22


def test_llama_servers_cache_n_stands_for_cached_tokens_when_the_usage_gives_none() -> None:
    timings = {"cache_n": 295, "prompt_n": 30, "prompt_ms": 16.9}
    older = Usage.from_openai({"prompt_tokens": 325, "completion_tokens": 3, "total_tokens": 328}, timings)
    assert older is not None and older.cached_tokens == 295
    assert older.as_dict()["prompt_tokens_details"] == {"cached_tokens": 295}
    newer = Usage.from_openai(
        {"prompt_tokens": 325, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": 290}}, timings
    )
    assert newer is not None and newer.cached_tokens == 290, "the usage's own figure wins"
    assert Usage.from_openai({"prompt_tokens": 5, "completion_tokens": 1}, {"cache_n": -1}).cached_tokens == 0  # type: ignore[union-attr]
