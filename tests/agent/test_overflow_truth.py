"""Refusals that say what is on the tape, and overflows that converge: an oversized prompt, the phases chain."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bub_nb.agent import Agent, OpenAIModel, ScriptedModel
from bub_nb.agent.eventloop import run_sync
from bub_nb.errors import ContextLengthError, ModelError, PromptTooLongError
from bub_nb.tape import Tape
from bub_nb.testing import OpenAICompatibleServer


@pytest.fixture
def endpoint() -> Iterator[tuple[OpenAICompatibleServer, OpenAIModel]]:
    with OpenAICompatibleServer() as server:
        model = OpenAIModel("m", base_url=server.base_url, api_key="k", timeout=5, max_retries=0)
        yield server, model
        run_sync(model.aclose())


def kinds(tape: Tape, after: int) -> list[str]:
    return [entry.payload.get("name") or entry.payload.get("kind") or entry.kind for entry in tape.read(after + 1)]


def test_an_oversized_prompt_the_window_was_learnt_from_says_what_it_left_and_spares_the_next_turn(
    tape: Tape, endpoint: tuple[OpenAICompatibleServer, OpenAIModel]
) -> None:
    server, model = endpoint
    server.context_window = 400
    agent = Agent(tape, model)
    agent.run("hello")
    before = len(tape)
    with pytest.raises(PromptTooLongError) as refused:
        agent.run("long words " * 400)
    message = str(refused.value)
    assert "nothing was written" not in message
    prompt_id = before + 2
    assert f"the prompt (#{prompt_id}) and this error are kept on the tape" in message
    assert kinds(tape, before) == ["system", "message", "prompt_too_long", "run"]
    assert message in str(tape.read(kinds=("error",))[-1].payload)

    before = len(tape)
    turn = agent.run("a small question")
    assert turn.ok and not turn.notices
    assert kinds(tape, before) == ["system", "message", "message", "run"]
    assert prompt_id not in tape.view().entry_ids


def phased(tape: Tape, agent: Agent, phases: int = 8) -> None:
    for number in range(phases):
        agent.run(f"question {number}")
        tape.handoff(f"phase/{number}", {"summary": f"Phase {number} covered " + "many things " * 30 + "[#2]."})


def test_phases_mode_bounds_its_chain_visibly_instead_of_handing_off(
    tape: Tape, endpoint: tuple[OpenAICompatibleServer, OpenAIModel]
) -> None:
    server, model = endpoint
    agent = Agent(tape, model, context="phases")
    phased(tape, agent)
    server.context_window = 700
    sizes = []
    for _ in range(3):
        before = len(tape)
        turn = agent.run("a small question")
        assert turn.ok and kinds(tape, before) == ["system", "message", "message", "run"]
        assert "'phases' mode" in turn.notices[0] and "no handoff was written" in turn.notices[0]
        sent = server.last_request["messages"]
        assert "left out to fit the window" in sent[1]["content"]
        sizes.append(len(server.requests))
    assert "auto_handoff/context_overflow" not in tape.anchor_names()
    assert sizes[2] - sizes[1] == 1  # once the window is known, no request is sent that cannot fit


def test_a_failed_retry_in_phases_mode_names_the_mode_and_never_hands_off_twice(tape: Tape) -> None:
    phased(tape, Agent(tape, ScriptedModel(["a", "b", "c"])), 3)
    overflow = ContextLengthError("maximum context length exceeded")
    # The request, the same with the chain bounded, the summary (failing, so quoted), the retry after the handoff.
    agent = Agent(tape, ScriptedModel([overflow, overflow, ModelError("down"), overflow]), context="phases")
    with pytest.raises(ContextLengthError, match="'phases' mode the view sends") as failed:
        agent.run("a question")
    assert "no new handoff" not in str(failed.value)
    assert tape.anchor_names().count("auto_handoff/context_overflow") == 1
    summaries = sum(1 for e in tape.read(kinds=("event",)) if e.payload.get("name") == "summary")
    for _ in range(2):
        agent = Agent(tape, ScriptedModel([overflow, overflow]), context="phases")
        with pytest.raises(ContextLengthError, match="so no new handoff was written"):
            agent.run("the same question again")
        assert agent.model.remaining == 0  # type: ignore[attr-defined]
    assert tape.anchor_names().count("auto_handoff/context_overflow") == 1
    assert sum(1 for e in tape.read(kinds=("event",)) if e.payload.get("name") == "summary") == summaries
