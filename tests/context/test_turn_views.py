"""What each turn saw: the view a run event records, and the request ``view_of_turn`` rebuilds from it,
checked message for message against what the local OpenAI-compatible endpoint received."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bub_nb import TurnView
from bub_nb.agent import Agent
from bub_nb.agent.models import OpenAIModel
from bub_nb.context import window
from bub_nb.context.cells import NotebookCells
from bub_nb.context.tokens import count_message_tokens
from bub_nb.errors import ContextError
from bub_nb.tape import Tape
from bub_nb.tape.events import NOTEBOOK_CELL, RUN, id_ranges, range_ids, run_data, run_view
from bub_nb.testing import OpenAICompatibleServer


def as_json(messages: Any) -> list[str]:
    """Messages compared as the wire carries them (tuples and lists alike, key order ignored)."""
    return [json.dumps(message, sort_keys=True) for message in messages]


def last_requests_per_turn(server: OpenAICompatibleServer, calls_per_turn: list[int]) -> list[list[dict[str, Any]]]:
    """The messages of each turn's last request, given how many model calls each turn made."""
    requests, found, at = server.requests, [], 0
    for calls in calls_per_turn:
        at += calls
        found.append(requests[at - 1]["messages"])
    assert at == len(requests), f"the endpoint got {len(requests)} requests, the turns made {at}"
    return found


def run_events(tape: Tape) -> list[Any]:
    return [entry for entry in tape.read() if entry.kind == "event" and entry.name == RUN]


def sample(text: str) -> str:
    """Echo a sample back, so a turn has a notebook tool to call."""
    return f"sample: {text}"


def test_every_turn_rebuilds_the_request_the_endpoint_received(
    openai_server: OpenAICompatibleServer, tape: Tape, model: OpenAIModel
) -> None:
    agent = Agent(tape, model, tools=[sample])
    openai_server.reply("First answer.")
    agent.run("Hello")
    tape.memory.save_long_term("The user prefers short answers.")  # memory changes between turns
    openai_server.reply_tool_calls([{"name": "sample", "arguments": {"text": "tea"}}])
    openai_server.reply_tool_calls([{"name": "memory_save", "arguments": {"content": "Likes tea."}}])
    openai_server.reply("Second answer.")
    agent.run("Sample tea, then remember it", stream=True)
    tape.handoff("phase/tasting", {"summary": "Tea was sampled", "next_steps": ["try coffee"]})
    openai_server.reply_tool_calls([{"name": "tape_anchors", "arguments": {}}])
    openai_server.reply("Third answer.")
    agent.run("Where are we?")

    expected = last_requests_per_turn(openai_server, [1, 3, 2])
    for position, request in zip((-3, -2, -1), expected, strict=True):
        rebuilt = tape.view_of_turn(position)
        assert isinstance(rebuilt, TurnView)
        assert as_json(rebuilt.messages) == as_json(request), f"turn {position} does not rebuild its request"
    runs = run_events(tape)
    # The same turn by its run id and by its run event's id.
    by_id = tape.view_of_turn(runs[1].meta["run_id"])
    assert as_json(tape.view_of_turn(runs[1].id).messages) == as_json(by_id.messages) == as_json(expected[1])
    first, second, third = (tape.view_of_turn(entry.id) for entry in runs)
    assert first.memory_version is not None and second.memory_version == first.memory_version + 1
    assert "short answers" not in first.memory_block and "short answers" in second.memory_block
    assert "Likes tea." in third.memory_block  # saved by a tool in turn 2, sent from turn 3 on
    assert third.anchor is not None and third.anchor.name == "phase/tasting" and third.mode == "last-anchor"
    assert third.recorded_system_tokens == count_message_tokens(expected[2][0])


def test_a_window_turn_rebuilds_what_the_cut_left(
    openai_server: OpenAICompatibleServer, tape: Tape, model: OpenAIModel
) -> None:
    agent = Agent(tape, model, context=window(3))
    for number in range(4):
        openai_server.reply(f"Answer {number}.")
        agent.run(f"Question {number}")
    recorded = run_view(run_events(tape)[-1])
    assert recorded is not None and recorded.mode == "window:3" and recorded.anchor is None
    assert as_json(tape.view_of_turn(-1).messages) == as_json(openai_server.last_request["messages"])
    assert len(tape.view_of_turn(-1).messages) == 4  # the system prompt and three messages


def test_a_view_that_starts_after_the_turns_own_prompt_still_finds_its_system_prompt(
    openai_server: OpenAICompatibleServer, tape: Tape, model: OpenAIModel
) -> None:
    openai_server.reply_tool_calls([{"name": "tape_info", "arguments": {}}])
    openai_server.reply("Done.")
    Agent(tape, model, context=window(2)).run("Look at the tape")
    sent = openai_server.last_request["messages"]
    assert [m["role"] for m in sent] == ["system", "assistant", "tool"]  # the prompt itself fell out of the window
    assert as_json(tape.view_of_turn(-1).messages) == as_json(sent)


def test_a_turn_in_the_notebook_mode_rebuilds_its_recorded_cells(
    openai_server: OpenAICompatibleServer, tape: Tape, model: OpenAIModel
) -> None:
    tape.ensure_bootstrap_anchor()
    tape.append_event(NOTEBOOK_CELL, {"cell": 3, "source": "df = load()", "error": None})
    openai_server.reply("Seen.")
    Agent(tape, model, context=NotebookCells()).run("What did I run?")
    sent = openai_server.last_request["messages"]
    assert "[Notebook cell 3 ran]" in sent[2]["content"]
    assert as_json(tape.view_of_turn(-1).messages) == as_json(sent)


def test_the_run_event_records_the_view_as_id_ranges(
    openai_server: OpenAICompatibleServer, tape: Tape, model: OpenAIModel
) -> None:
    openai_server.reply("Hi.")
    turn = Agent(tape, model).run("Hello")
    data = run_data(turn.entries[-1])
    assert data is not None
    view = data["view"]
    assert set(view) == {"mode", "anchor", "entries", "memory_version", "system_tokens"}
    assert turn.view is not None
    assert view["entries"] == id_ranges(turn.view.entry_ids)
    assert view["anchor"] == tape.find_anchor("session/start").id and view["mode"] == "last-anchor"
    assert view["system_tokens"] == count_message_tokens(openai_server.last_request["messages"][0])


@pytest.mark.parametrize(
    ("ids", "ranges"),
    [((), []), ((5,), [[5, 5]]), ((1, 2, 3, 4, 7, 9, 10, 11, 12), [[1, 4], [7, 7], [9, 12]])],
)
def test_entry_ids_round_trip_through_ranges(ids: tuple[int, ...], ranges: list[list[int]]) -> None:
    assert id_ranges(ids) == ranges
    assert range_ids(ranges) == ids


@pytest.mark.parametrize("bad", [[[3, 1]], [[1, 2], [2, 3]], [[0, 1]], [[1]], "1-3", [[1.0, 2]]])
def test_malformed_ranges_are_not_read_as_a_view(bad: Any) -> None:
    assert range_ids(bad) is None


def test_run_events_without_a_view_stay_valid_and_say_why_they_cannot_be_rebuilt(tape: Tape) -> None:
    tape.ensure_bootstrap_anchor()
    tape.append_message({"role": "user", "content": "hi"})
    old = tape.append_event(RUN, {"status": "ok", "usage": None, "model": "bub", "elapsed_ms": 1.0, "steps": 1})
    assert run_view(old) is None
    assert tape.to_frame()["id"].tolist()[-1] == old.id  # still a readable entry like any other
    with pytest.raises(ContextError, match=rf"Turn #{old.id} .* recorded no view"):
        tape.view_of_turn(-1)


def test_a_turn_that_does_not_exist_is_one_clear_error(
    openai_server: OpenAICompatibleServer, tape: Tape, model: OpenAIModel
) -> None:
    with pytest.raises(ContextError, match="has 0 turns; there is no turn -1"):
        tape.view_of_turn(-1)
    openai_server.reply("Hi.")
    turn = Agent(tape, model).run("Hello")
    with pytest.raises(ContextError, match="has 1 turns; there is no turn -2"):
        tape.view_of_turn(-2)
    with pytest.raises(ContextError, match="No turn with run id 'nope'"):
        tape.view_of_turn("nope")
    with pytest.raises(ContextError, match=rf"Entry #{turn.entries[1].id} .* is a message, not a turn's run event"):
        tape.view_of_turn(turn.entries[1].id)
    with pytest.raises(ContextError, match=r"Entry #1 .* is an anchor, not a turn's run event: .*-1 the last turn"):
        tape.view_of_turn(1)  # a first turn by position is spelled from the end
    with pytest.raises(ContextError, match="is not on tape"):
        tape.view_of_turn(10_000)
    with pytest.raises(ContextError, match="-1 is the last turn"):
        tape.view_of_turn(0)
