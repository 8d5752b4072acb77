"""Summarizing handoffs: the model summarizes the phase it closes, citing its entries, and every citation is checked."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bub_nb.agent import Agent
from bub_nb.agent.models import OfflineModel, OpenAIModel, ScriptedModel
from bub_nb.agent.summaries.extractive import SUMMARY_INSTRUCTIONS, parse_items
from bub_nb.agent.summaries.summarize import FALLBACK
from bub_nb.errors import CommandError, ContextLengthError, ModelError
from bub_nb.tape import MemoryTapeStore, Tape, TapeEntry
from bub_nb.tape.citations import SUMMARY_KEYS, find_citations
from bub_nb.tape.events import handoff_entries
from bub_nb.testing import OpenAICompatibleServer


def phase_ids(tape: Tape, anchor_id: int) -> list[int]:
    """What a summary of the phase from ``anchor_id`` may cite, read straight off the tape."""
    kinds = ("message", "tool_call", "tool_result", "error")
    return [
        anchor_id,
        *(e.id for e in tape.read(anchor_id + 1) if e.kind in kinds and e.meta.get("context") is not False),
    ]


def citations_in(text: str) -> list[int]:
    return [entry_id for citation in find_citations(text) for entry_id in citation.ids]


def request_ids(request: dict[str, Any]) -> list[int]:
    """The ids labelling the entries a summarizing request sent."""
    (user,) = [m["content"] for m in request["messages"] if m["role"] == "user"]
    return [item.first for item in parse_items(user)]


def talk(agent: Agent, prompts: list[str]) -> None:
    for prompt in prompts:
        assert agent.run(prompt).ok


# -- the offline model --------------------------------------------------------------------------------


def test_offline_summary_cites_only_the_closed_phase_and_user_state_wins(tape: Tape) -> None:
    agent = Agent(tape, model="offline")
    talk(agent, ["We start with the schema.", "Next: indexes."])
    agent.handoff("phase/1", summary="hand-written")
    talk(agent, ["Let's use Postgres. We decided on JSONB columns.", "What next? Then we add tests."])
    anchor_id = tape.find_anchor("phase/1").id
    closed = phase_ids(tape, anchor_id)

    written = agent.handoff("phase/2", summarize=True, topic="db")

    assert [e.kind for e in written] == ["event", "anchor", "event"]
    state = written[1].payload["state"]
    assert set(SUMMARY_KEYS) | {"topic"} == set(state)
    assert state["summarized_by"] == "offline" and state["topic"] == "db"
    assert state["range"] == [anchor_id, closed[-1]]
    cited = citations_in(state["summary"]) + citations_in(state["next_steps"])
    assert cited and set(cited) <= set(closed)
    assert state["sources"] == sorted(set(cited))
    assert state["removed_citations"] == 0
    assert "Postgres" in state["summary"] and "hand-written" in state["summary"]  # carried over from phase/1
    first = tape.view().messages[0]["content"]
    assert first.startswith("[Anchor created: phase/2]: ") and json.loads(first.split("]: ", 1)[1]) == state

    user_wins = agent.handoff("phase/3", summarize=True, summary="mine")[1].payload["state"]
    assert user_wins["summary"] == "mine" and user_wins["summarized_by"] == "user"
    assert user_wins["uncited"] == ["mine"] and user_wins["sources"] == []  # of the text kept, not the one dropped


def test_summary_event_records_its_cost_and_never_enters_a_view(tape: Tape) -> None:
    agent = Agent(tape, model="offline")
    talk(agent, ["Plan the survey.", "We decided to sample 200 people."])
    event, anchor, _ = agent.handoff("phase/2", summarize=True)

    assert event.name == "summary" and event.id < anchor.id
    data = event.payload["data"]
    assert data["anchor"] == "phase/2" and data["parts"] == 1 and data["model"] == "offline"
    assert data["usage"]["prompt_tokens"] > 0 and len(data["requests"]) == 1
    assert event.id not in Agent(tape, context=None).view().entry_ids
    row = tape.to_frame().set_index("id").loc[event.id]
    assert row["prompt_tokens"] == data["usage"]["prompt_tokens"]


def test_plain_handoff_carries_only_what_the_user_gave(tape: Tape) -> None:
    agent = Agent(tape, model="offline")
    talk(agent, ["hello"])
    written = agent.handoff("phase/2", note="kept")
    assert [e.kind for e in written] == ["anchor", "event"] and written[0].payload["state"] == {"note": "kept"}


def test_failed_summary_writes_nothing(tape: Tape) -> None:
    talk(Agent(tape, model="offline"), ["hello"])
    before = len(tape)
    agent = Agent(tape, model=ScriptedModel([ModelError("the endpoint is down")]))
    with pytest.raises(ModelError, match="down"):
        agent.handoff("phase/2", summarize=True)
    with pytest.raises(CommandError, match="down"):
        Agent(tape, model=ScriptedModel([ModelError("the endpoint is down")])).run(",handoff phase/2 summarize=true")
    assert len(tape) == before


def test_comma_handoff_summarizes_with_the_agents_model(tape: Tape) -> None:
    agent = Agent(tape, model="offline")
    talk(agent, ["We chose pandas for the analysis."])
    turn = agent.run(",handoff name=phase/2 summarize=true")
    assert turn.ok and "phase/2" in turn.text
    state = tape.find_anchor("phase/2").state
    assert state is not None and state["summarized_by"] == "offline" and "pandas" in state["summary"]


# -- property: deterministic, every citation valid -------------------------------------------------------

WORDS = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=60)
TURN = st.tuples(
    st.one_of(WORDS, st.sampled_from(["We decided to use [#999].", "Next, plot it. Then ship.", "Let's go!"])),
    WORDS,
    st.booleans(),
)


def write_session(turns: list[tuple[str, str, bool]], earlier: bool) -> Tape:
    tape = Tape("generated", MemoryTapeStore())
    tape.ensure_bootstrap_anchor()
    if earlier:
        # Written as another writer would: a handoff through the API refuses a citation past the tape.
        state = {"summary": "Earlier we chose X [#1]. Odd [#404].", "sources": "not a list"}
        tape.extend(handoff_entries("phase/1", state))
    for asked, answered, with_tool in turns:
        tape.append_message({"role": "user", "content": asked})
        if with_tool:
            call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            tape.extend([TapeEntry.tool_call([call]), TapeEntry.tool_result([answered])])
        tape.append_message({"role": "assistant", "content": answered})
        tape.append_event("run", {"status": "ok"})
    return tape


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(TURN, min_size=1, max_size=8), st.booleans(), st.sampled_from([None, 700]))
def test_offline_summary_is_deterministic_and_every_citation_is_valid(
    turns: list[tuple[str, str, bool]], earlier: bool, window: int | None
) -> None:
    states = []
    for _ in range(2):
        tape = write_session(turns, earlier)
        anchor_id = tape.last_anchor().id  # type: ignore[union-attr]
        closed = phase_ids(tape, anchor_id)
        _, anchor, _ = Agent(tape, model=OfflineModel(context_window=window)).handoff("phase/2", summarize=True)
        state = anchor.payload["state"]
        cited = citations_in(state["summary"]) + citations_in(state["next_steps"])
        assert state["range"] == [anchor_id, closed[-1]]
        # The phase's own entries, and the earlier entries the lines carried over came from (never past them).
        carried = {1} if earlier else set()
        assert state["summary"] and set(cited) <= set(range(anchor_id, closed[-1] + 1)) | carried
        assert state["sources"] == sorted(set(cited)) and state["removed_citations"] == 0
        states.append(state)
    assert states[0] == states[1]


# -- against the local OpenAI-compatible endpoint ---------------------------------------------------------


def test_summarizing_request_holds_exactly_the_phase_entries(tape: Tape, openai_server: Any, model: Any) -> None:
    agent = Agent(tape, model=model)
    openai_server.reply("Noted.").reply("Fine.")
    talk(agent, ["Old phase.", "Still old."])
    agent.handoff("phase/1", summary="old")
    openai_server.reply("We will use DuckDB.").reply("Done.")
    talk(agent, ["Pick a database.", "Load the data."])
    anchor_id = tape.find_anchor("phase/1").id
    expected = phase_ids(tape, anchor_id)
    # "Load more" cites the prompt that asked to load the data: a citation must name an entry that says the claim.
    openai_server.reply(f"Summary:\nDuckDB was picked [#{expected[2]}].\n\nNext steps:\nLoad more [#{expected[-2]}].")

    state = agent.handoff("phase/2", summarize=True)[1].payload["state"]

    request = openai_server.last_request
    assert request["messages"][0] == {"role": "system", "content": SUMMARY_INSTRUCTIONS}
    assert request_ids(request) == expected and "tools" not in request
    assert state["summary"] == f"DuckDB was picked [#{expected[2]}]."
    assert state["next_steps"] == f"Load more [#{expected[-2]}]."
    assert state["sources"] == [expected[2], expected[-2]] and state["summarized_by"] == "openai:test-model"


def test_a_citation_outside_the_phase_is_removed_and_counted(tape: Tape, openai_server: Any, model: Any) -> None:
    agent = Agent(tape, model=model)
    openai_server.reply("Hi.")
    talk(agent, ["First phase."])
    agent.handoff("phase/1")
    openai_server.reply("Use a bar chart.")
    talk(agent, ["How should we plot it?"])
    inside = phase_ids(tape, tape.find_anchor("phase/1").id)[-1]
    openai_server.reply(
        f"Summary:\nA bar chart was chosen [#{inside}]. The data came from [#1].\nNext steps:\nShip it."
    )

    state = agent.handoff("phase/2", summarize=True)[1].payload["state"]

    assert state["summary"] == f"A bar chart was chosen [#{inside}]. The data came from."
    assert state["removed_citations"] == 1 and state["sources"] == [inside]
    assert state["uncited"] == ["The data came from.", "Ship it."]


def test_a_phase_longer_than_the_window_is_summarized_in_parts(tmp_path: Any) -> None:
    with OpenAICompatibleServer(
        context_window=900, default_text="Summary:\nSales figures: the north grew [#4-#5]."
    ) as server:
        model = OpenAIModel("test-model", base_url=server.base_url, api_key="test", timeout=5, max_retries=0)
        tape = Tape("long", MemoryTapeStore())
        tape.ensure_bootstrap_anchor()
        for n in range(24):
            tape.append_message({"role": "user", "content": f"Question {n}: " + "about the sales figures " * 6})
            tape.append_message({"role": "assistant", "content": f"Answer {n}: " + "the north region grew " * 6})
        expected = phase_ids(tape, tape.last_anchor().id)  # type: ignore[union-attr]

        _, anchor, _ = Agent(tape, model=model).handoff("phase/2", summarize=True)

        requests = server.requests
        refused, asked = requests[0], requests[1:]
        assert request_ids(refused) == expected  # the whole phase first: the endpoint refuses it
        parts = [request_ids(r) for r in asked if "part:" not in r["messages"][1]["content"]]
        assert len(parts) > 1 and [i for part in parts for i in part] == expected
        combine = asked[-1]["messages"][1]["content"]
        assert [line.split("]")[0] for line in combine.splitlines() if line.startswith("[#")] == [
            f"[#{part[0]}-#{part[-1]}" for part in parts
        ]
        assert tape.read(anchor.id - 1)[0].payload["data"]["parts"] == len(parts)
        assert anchor.payload["state"]["range"] == [expected[0], expected[-1]]
        run_model_close(model)


def run_model_close(model: OpenAIModel) -> None:
    from bub_nb.agent.eventloop import run_sync

    run_sync(model.aclose())


def test_on_overflow_the_retry_carries_the_summary_of_the_dropped_phase(
    tape: Tape, openai_server: Any, model: Any
) -> None:
    agent = Agent(tape, model=model)
    openai_server.reply("We settled on weekly reports. " + "The reasons were discussed at length. " * 30)
    talk(agent, ["How often do we report?"])
    answer = next(e.id for e in tape.iter_reverse(kinds=("message",)))
    openai_server.fail_context_length()
    openai_server.reply(f"Summary:\nReports are weekly [#{answer}].\nNext steps:\n")
    openai_server.reply("Weekly, as agreed.")

    turn = agent.run("Remind me of the cadence.")

    assert turn.ok and "with a summary of" in turn.notices[0]
    retried = openai_server.last_request["messages"]
    assert retried[1]["content"].startswith("[Anchor created: auto_handoff/context_overflow]: ")
    state = json.loads(retried[1]["content"].split("]: ", 1)[1])
    assert state["summary"] == f"Reports are weekly [#{answer}]." and state["reason"] == "context_length_exceeded"
    assert state["summarized_by"] == "openai:test-model" and retried[-1]["content"] == "Remind me of the cadence."


# -- overflow without amnesia, offline --------------------------------------------------------------------


def test_offline_overflow_retry_carries_a_summary_of_the_dropped_phase(tape: Tape) -> None:
    agent = Agent(tape, model=OfflineModel(context_window=1500))
    turn = None
    for n in range(30):
        turn = agent.run(f"Question {n}: we decided to compare region {n} with the others.")
        if turn.notices:
            break
    assert turn is not None and turn.notices, "the window never overflowed"
    first = turn.view.messages[0]["content"]  # type: ignore[union-attr]
    assert first.startswith("[Anchor created: auto_handoff/context_overflow]: ")
    state = json.loads(first.split("]: ", 1)[1])
    assert state["summary"].strip() and citations_in(state["summary"])
    assert set(citations_in(state["summary"])) <= set(range(state["range"][0], state["range"][1] + 1))
    assert "whose summary is" in turn.text  # the model saw it


def test_overflow_falls_back_to_the_extractive_summary(tape: Tape) -> None:
    talk(Agent(tape, model="offline"), ["We chose the blue palette. " + "It reads well on a projector. " * 20])
    model = ScriptedModel([ContextLengthError("prompt too long"), ModelError("summary failed"), "ok"])
    turn = Agent(tape, model=model).run("Go on.")
    assert turn.ok and FALLBACK in turn.notices[0]
    state = tape.find_anchor("auto_handoff/context_overflow").state
    assert state is not None and state["summarized_by"] == FALLBACK and "blue palette" in state["summary"]
    event = next(e for e in tape.read() if e.kind == "event" and e.name == "summary")
    assert "summary failed" in event.payload["data"]["error"]


def test_the_model_can_close_its_phase_with_a_summary(tape: Tape) -> None:
    talk(Agent(tape, model="offline"), ["We picked the median over the mean."])
    asked = next(e.id for e in tape.read() if e.kind == "message")
    call = {"tool_calls": [{"name": "tape.handoff", "arguments": {"name": "phase/2", "summarize": True}}]}
    model = ScriptedModel([call, f"Summary:\nThe median was picked [#{asked}].", "Handed off."])
    turn = Agent(tape, model=model).run("Close this phase.")
    assert turn.ok and turn.text == "Handed off."
    state = tape.find_anchor("phase/2").state
    assert state is not None and state["summary"] == f"The median was picked [#{asked}]."
    assert state["sources"] == [asked]
    assert any(e.kind == "anchor" for e in turn.entries)  # written during the turn, so part of it
