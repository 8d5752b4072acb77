"""Summaries that keep what they stand on: facts across auto-handoffs, sentences, sources, the user's own words."""

from __future__ import annotations

import json

import pytest

from bub_nb.agent import Agent, ScriptedModel
from bub_nb.agent.models import OfflineModel
from bub_nb.agent.summaries.extractive import Item, extractive_summary
from bub_nb.errors import BubNbError, ContextLengthError
from bub_nb.tape import Tape
from bub_nb.tape.citations import check_citations, cited_ids, uncited_sentences

FACTS = (
    "Fact 1: the dataset is sales_2024.csv.",
    "Fact 2: the owner is Mira.",
    "Fact 3: we decided to use polars, not pandas.",
    "Fact 4: the deadline is Friday.",
    "Fact 5: amounts are in euros.",
    "Fact 6: the region column is called zone.",
)
KEYS = ("sales_2024.csv", "Mira", "polars", "Friday", "euros", "zone")
AUTO = "auto_handoff/context_overflow"


def test_six_facts_survive_three_auto_handoffs_in_a_window_of_800(tape: Tape) -> None:
    agent = Agent(tape, OfflineModel(context_window=800))
    for fact in FACTS:
        agent.run(f"{fact} Please remember it.")
    filler = 0
    while tape.anchor_names().count(AUTO) < 3:
        agent.run(f"Filler question number {filler} about something unrelated, only to fill the context window.")
        filler += 1
        assert filler < 30
    sent = json.dumps(tape.view().messages, ensure_ascii=False)
    assert [key for key in KEYS if key not in sent] == []


def test_a_models_summary_that_drops_what_the_anchor_carried_gets_it_back(tape: Tape) -> None:
    tape.ensure_bootstrap_anchor()
    told = tape.append_message({"role": "user", "content": "The owner is Mira."}).id
    tape.handoff("phase/1", {"summary": f"The owner is Mira [#{told}]."})
    prompt_id = tape.append_message({"role": "user", "content": "more " * 300}).id  # an overflow has a size
    summary = f"Summary:\nWe talked more [#{prompt_id}]."
    overflow = ContextLengthError("too long")
    turn = Agent(tape, ScriptedModel([overflow, summary, "ok"])).run("go on")
    assert turn.ok
    state = tape.find_anchor(AUTO).state or {}
    assert "Carried over: The owner is Mira" in state["summary"] and "We talked more" in state["summary"]


@pytest.mark.parametrize(
    ("text", "uncited"),
    [
        ("We compared pandas vs. polars on the same data [#6].", []),
        ("- Asked: “Fact 1: the dataset is sales_2024.csv. Please remember it.” [#3].", []),
        ('He said "stop. now" [#2]. J. Smith agreed, e.g. on Monday [#3].', []),
        ("One claim [#2]. Another claim. A third [#4].", ["Another claim."]),
    ],
)
def test_sentences_end_outside_quotes_and_abbreviations(text: str, uncited: list[str]) -> None:
    assert uncited_sentences(text) == uncited


def test_the_offline_summary_whose_every_line_cites_reports_none_uncited() -> None:
    items = [
        Item(1, 1, "anchor", "session/start"),
        Item(2, 2, "user", "We compared pandas vs. polars. Which is faster?"),
        Item(3, 3, "assistant", 'You asked: "We compared pandas vs. polars." Polars is faster.'),
        Item(4, 4, "user", "Then we decided to use polars."),
    ]
    summary, _ = extractive_summary(items)
    assert check_citations(summary, 1, 4).uncited == ()
    decided = [line for line in summary.splitlines() if "Decided:" in line]
    assert decided and all("[#4]" in line for line in decided)  # the user's decision, not the answer's echo


def test_summarize_with_my_own_words_keeps_no_bookkeeping_of_the_text_thrown_away(tape: Tape) -> None:
    agent = Agent(tape, model="offline")
    agent.run("Plan the survey.")
    agent.run("We decided to sample 200 people.")
    state = agent.handoff("phase/1", summarize=True, summary="my own words")[1].payload["state"]
    assert state["summary"] == "my own words" and state["summarized_by"] == "user"
    assert state["uncited"] == ["my own words"]
    assert set(state["sources"]) <= set(cited_ids(state["next_steps"]))


def test_resummarizing_an_anchor_only_phase_never_nests_carried_over(tape: Tape) -> None:
    agent = Agent(tape, model="offline")
    agent.run("Fact: the owner is Mira.")
    for number in range(4):
        agent.handoff(f"phase/{number}", summarize=True)
    summary = tape.last_anchor().state["summary"]  # type: ignore[index, union-attr]
    assert "Carried over: Carried over" not in summary and "“Carried over" not in summary
    assert "Mira" in summary


def test_a_citation_of_an_entry_the_model_never_saw_is_no_source(tape: Tape) -> None:
    tape.ensure_bootstrap_anchor()
    user = tape.append_message({"role": "user", "content": "hello"}).id
    note = tape.append_event("notebook", {"path": "x.ipynb"}).id
    tape.append_message({"role": "assistant", "content": "hi"})  # the event lies inside the phase's range
    reply = f"Summary:\nSaid hello [#{user}]. Opened a notebook [#{note}]."
    state = Agent(tape, ScriptedModel([reply])).handoff("phase/1", summarize=True)[1].payload["state"]
    assert state["sources"] == [user] and state["removed_citations"] == 1
    assert f"[#{note}]" not in state["summary"]


def test_a_window_too_small_for_one_entry_is_one_error_line(tape: Tape) -> None:
    agent = Agent(tape, model="offline")
    agent.run("x " * 2000)
    with pytest.raises(BubNbError, match="does not fit the context window") as failed:
        Agent(tape, OfflineModel(context_window=120)).handoff("phase/1", summarize=True)
    assert type(failed.value).__name__ != "_TooLong" and "\n" not in str(failed.value)


def test_summaries_count_in_the_turns_usage_and_in_usage_by_phase(tape: Tape) -> None:
    talk = Agent(tape, ScriptedModel([{"content": "a", "usage": {"prompt_tokens": 10, "completion_tokens": 1}}]))
    hello = talk.run("hello").entries[1].id
    said = {"content": f"Summary:\nSaid hello [#{hello}].", "usage": {"prompt_tokens": 100, "completion_tokens": 20}}
    Agent(tape, ScriptedModel([said])).handoff("phase/1", summarize=True)
    more = tape.append_message({"role": "user", "content": "more " * 300}).id  # an overflow has a size
    overflow = ContextLengthError("too long")
    auto = {"content": f"Summary:\nMore [#{more}].", "usage": {"prompt_tokens": 300, "completion_tokens": 30}}
    answer = {"content": "b", "usage": {"prompt_tokens": 5, "completion_tokens": 2}}
    turn = Agent(tape, ScriptedModel([overflow, auto, answer])).run("go on")
    assert turn.usage is not None and (turn.usage.prompt_tokens, turn.usage.completion_tokens) == (305, 32)
    usage = tape.to_frame().tape.usage(by="phase")
    assert int(usage["tokens_in"].sum()) == 10 + 100 + 300 + 5
    assert int(usage["tokens_out"].sum()) == 1 + 20 + 30 + 2
    assert int(usage["turns"].sum()) == 2
