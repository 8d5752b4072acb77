"""``handoff_at``: a summarizing handoff before the turn whose request would pass that share of the window."""

from __future__ import annotations

import asyncio

import pytest

from bub_nb import Tape
from bub_nb.agent import Agent
from bub_nb.agent.loop import HANDOFF_AT_ANCHOR
from bub_nb.agent.models import OfflineModel, OpenAIModel, ScriptedModel
from bub_nb.errors import BubNbError
from bub_nb.tape.stores.memory import MemoryTapeStore
from bub_nb.testing import OpenAICompatibleServer


def test_a_turn_that_would_pass_handoff_at_is_preceded_by_a_summarizing_handoff_said_in_its_notices() -> None:
    tape = Tape("early", MemoryTapeStore())
    agent = Agent(tape, OfflineModel(context_window=2000), handoff_at=0.5)
    turns = [agent.run(f"Fact {n}: the sensor in room {n} reads {n * 7} degrees. " * 3) for n in range(1, 12)]
    early = [turn for turn in turns if any(HANDOFF_AT_ANCHOR in notice for notice in turn.notices)]
    assert early, "some turn passed half the window"
    assert tape.anchor_names().count(HANDOFF_AT_ANCHOR) == len(early)
    anchor = tape.find_anchor(HANDOFF_AT_ANCHOR)
    assert anchor.state and anchor.state["summary"] and anchor.state["sources"]
    assert all(not turn.notices or "context_overflow" not in " ".join(turn.notices) for turn in turns)
    assert all(turn.ok for turn in turns)


def test_handoff_at_must_be_a_share_of_the_window() -> None:
    tape = Tape("bad", MemoryTapeStore())
    for bad in (0, 1.5, -0.2, True):
        with pytest.raises(BubNbError, match="share of the model's window"):
            Agent(tape, "offline", handoff_at=bad)


def test_an_interrupt_while_the_handoff_is_summarized_keeps_the_prompt_writes_no_anchor_and_the_next_turn_tries() -> (
    None
):
    tape = Tape("stopped", MemoryTapeStore())
    tape.ensure_bootstrap_anchor()
    first = tape.append_message({"role": "user", "content": "The sensors write sensors.csv every minute."}).id
    summary = f"Summary:\nThe sensors write sensors.csv [#{first}]."
    model = ScriptedModel([KeyboardInterrupt, summary, "Plotted."], context_window=4000)
    agent = Agent(tape, model, handoff_at=0.05)
    with pytest.raises(KeyboardInterrupt):
        agent.run("Plot the temperature per hour.")
    stopped = [entry for entry in tape.read() if entry.meta.get("run_id")]
    assert [e.kind for e in stopped] == ["system", "message", "error", "error", "event"]  # no anchor, no summary
    assert stopped[1].payload["content"] == "Plot the temperature per hour."
    assert [e.payload["kind"] for e in stopped[2:4]] == ["handoff.interrupted", "interrupted"]
    assert agent.last_turn is not None and agent.last_turn.status == "interrupted"
    assert "nothing of it was written" in " ".join(agent.last_turn.notices)
    assert HANDOFF_AT_ANCHOR not in tape.anchor_names()

    turn = agent.run("Plot the temperature per hour.")
    assert turn.ok and turn.text == "Plotted." and tape.anchor_names().count(HANDOFF_AT_ANCHOR) == 1
    assert any(HANDOFF_AT_ANCHOR in notice for notice in turn.notices)


def test_abort_while_the_handoff_is_summarized_returns_the_interrupted_turn(
    openai_server: OpenAICompatibleServer, model: OpenAIModel
) -> None:
    async def scenario() -> None:
        tape = Tape("aborted", MemoryTapeStore())
        tape.ensure_bootstrap_anchor()
        tape.append_message({"role": "user", "content": "The sensors write sensors.csv every minute."})
        model.context_window = 8192  # the window an earlier refusal named
        openai_server.delay(600, "Summary:\nToo late [#3].")  # only the abort can end the wait
        agent = Agent(tape, model, handoff_at=0.05)
        task = asyncio.create_task(agent.arun("Plot the temperature per hour."))
        while not openai_server.requests:  # the summary is being asked for
            await asyncio.sleep(0.01)
        aborted = agent.abort()
        turn = await task

        assert aborted is turn and turn.status == "interrupted" and turn.text == ""
        assert [e.kind for e in turn.entries] == ["system", "message", "error", "error", "event"]
        assert HANDOFF_AT_ANCHOR not in tape.anchor_names() and len(openai_server.requests) == 1

    asyncio.run(scenario())
