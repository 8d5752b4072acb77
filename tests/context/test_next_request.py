"""The whole next request, in parts: each part's tokens equal the part of the request the endpoint then receives,
and the total equals what the request counts (reply priming included once)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from bub_nb.agent import Agent
from bub_nb.agent.models import OfflineModel, OpenAIModel
from bub_nb.agent.preflight import request_preview
from bub_nb.context import FULL, build_view, window
from bub_nb.context.request import PARTS, gauge_text, next_request
from bub_nb.context.tokens import (
    REPLY_PRIMING,
    count_message_tokens,
    count_messages_tokens,
    count_text_tokens,
    count_tools_tokens,
)
from bub_nb.tape import Tape
from bub_nb.testing import OpenAICompatibleServer


def sample(text: str) -> str:
    """Echo a sample back, so the request carries a notebook tool's schema."""
    return f"sample: {text}"


def received_parts(body: dict[str, Any]) -> dict[str, int]:
    """The parts of a request the endpoint received, counted by the same rules."""
    messages = body["messages"]
    system, *view, user = messages
    memory = system["content"][system["content"].index("<memory>") : system["content"].index("</memory>") + 9]
    return {
        "system prompt": count_message_tokens(system) - count_text_tokens(memory),
        "memory block": count_text_tokens(memory),
        "view": sum(count_message_tokens(message) for message in view),
        "prompt": count_message_tokens(user),
        "reply priming": REPLY_PRIMING,
        "tool schemas": count_tools_tokens(body.get("tools")),
    }


@pytest.mark.parametrize("turns_before", [0, 2])
def test_the_shown_request_is_the_request_the_endpoint_then_receives_part_for_part(
    openai_server: OpenAICompatibleServer, tape: Tape, model: OpenAIModel, turns_before: int
) -> None:
    agent = Agent(tape, model, tools=[sample])
    for number in range(turns_before):
        openai_server.reply(f"Answer {number}.")
        agent.run(f"Fact {number}: the meeting moved to room {number}.")
    tape.memory.save_long_term("The class meets on Thursdays.")
    shown = request_preview(agent, "Where is the meeting?")
    openai_server.reply("Room 1.")
    agent.run("Where is the meeting?")
    body = openai_server.last_request
    assert {part.name: part.tokens for part in shown.parts} == received_parts(body)
    assert [part.name for part in shown.parts] == list(PARTS)
    assert shown.total_tokens == count_messages_tokens(body["messages"]) + count_tools_tokens(body["tools"])
    assert list(shown.messages) == body["messages"]
    # What the endpoint counted as prompt tokens is the request without its tools, priming included once.
    assert agent.last_turn is not None and agent.last_turn.usage is not None
    assert agent.last_turn.usage.prompt_tokens == shown.total_tokens - shown.tokens_of("tool schemas")


def test_the_parts_add_up_to_the_view_total_plus_what_the_view_leaves_out(tape: Tape) -> None:
    tape.ensure_bootstrap_anchor()
    tape.append_message({"role": "user", "content": "Fact 1: the budget is 400 euros."})
    view = build_view(tape)
    request = next_request(view, "You are helpful.\n\n<memory>\nlikes tea\n</memory>", prompt="And?")
    assert view.total_tokens == sum(view.tokens) + REPLY_PRIMING  # the view's own total carries the priming
    assert request.tokens_of("view") + request.tokens_of("reply priming") == view.total_tokens
    assert request.total_tokens == count_messages_tokens(request.messages)
    assert request.window is None and request.room is None


def test_the_request_is_measured_against_the_models_window(tape: Tape) -> None:
    agent = Agent(tape, OfflineModel(context_window=800))
    request = request_preview(agent)
    # The offline model measures its messages against the window and leaves the tool schemas out, as it says.
    assert not request.tools_in_window
    assert request.window_tokens == request.total_tokens - request.tokens_of("tool schemas")
    assert request.window == 800 and request.room == 800 - request.window_tokens
    assert f"{request.window_tokens} / 800 tokens" in request.to_text()
    text = str(request)
    assert re.search(rf"counted +{request.window_tokens} ", text) and "does not count them against its window" in text
    assert re.search(rf"whole request +{request.total_tokens} ", text)
    for name in PARTS:
        assert name in request.to_text()
    assert len(tape) == 0, "a preview writes nothing"


def test_a_preview_on_a_new_tape_shows_the_anchor_the_first_turn_writes(tape: Tape) -> None:
    agent = Agent(tape, OfflineModel())
    shown = request_preview(agent, "Hello")
    agent.run("Hello")
    assert shown.messages[1]["content"].startswith("[Anchor created: session/start]")
    assert agent.last_turn is not None and agent.last_turn.usage is not None
    assert agent.last_turn.usage.prompt_tokens == shown.total_tokens - shown.tokens_of("tool schemas")


def test_the_gauge_says_when_a_request_is_over_the_window() -> None:
    assert gauge_text(200, 800, width=8) == "[##......] 200 / 800 tokens (25%)"
    assert gauge_text(900, 800, width=8).endswith("OVER THE WINDOW")
    assert gauge_text(12, None) == "12 tokens (window unknown)"


@pytest.mark.parametrize("context", [window(4), FULL, "session/start"], ids=["window:4", "full", "anchor"])
def test_every_mode_previews_the_view_the_turn_then_sends(
    openai_server: OpenAICompatibleServer, tape: Tape, model: OpenAIModel, context: Any
) -> None:
    tape.ensure_bootstrap_anchor()
    agent = Agent(tape, model, context=context)
    for number in range(3):
        openai_server.reply(f"Answer {number}.")
        agent.run(f"Fact {number}: the meeting moved to room {number}.")
    before = len(tape)
    shown = request_preview(agent, "Where is the meeting?")
    assert len(tape) == before, "a preview writes nothing"
    openai_server.reply("Room 2.")
    agent.run("Where is the meeting?")
    assert list(shown.messages) == openai_server.last_request["messages"]
