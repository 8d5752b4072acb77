"""What the extractive summary keeps: decisions (said, accepted, confirmed), numbers, paths, commands, within budget."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from bub_nb.agent import Agent
from bub_nb.agent.models import OfflineModel
from bub_nb.agent.summaries.extractive import Item, extractive_summary
from bub_nb.agent.summaries.gist import FLOOR, SHARE
from bub_nb.agent.summaries.summarize import Phase, Summary, extractive_phase_summary, fitted
from bub_nb.context.retention import anchor_retention
from bub_nb.context.tokens import count_text_tokens
from bub_nb.tape import Tape
from bub_nb.tape.citations import cited_ids

FACTS = (
    "Fact 1: the dataset is sales_2024.csv.",
    "Fact 2: the owner is Mira.",
    "Fact 3: we decided to use polars, not pandas.",
    "Fact 4: the deadline is Friday.",
    "Fact 5: amounts are in euros.",
    "Fact 6: the region column is called zone.",
)
AUTO = "auto_handoff/context_overflow"


def decided(summary: str) -> list[str]:
    return [line for line in summary.splitlines() if "Decided:" in line]


def test_the_decision_of_fact_3_survives_the_overflow_summary_in_a_window_of_800(tape: Tape) -> None:
    agent = Agent(tape, OfflineModel(context_window=800))
    told = [agent.run(f"{fact} Please remember it.").entries[1].id for fact in FACTS]
    filler = 0
    while AUTO not in tape.anchor_names():
        agent.run(f"Filler question number {filler} about something unrelated, only to fill the context window.")
        filler += 1
        assert filler < 30
    state = tape.find_anchor(AUTO).state or {}
    lines = decided(state["summary"])
    assert any("we decided to use polars" in line and f"[#{told[2]}]" in line for line in lines), state["summary"]
    assert "polars" in json.dumps(tape.view().messages, ensure_ascii=False)


def test_decided_lines_hold_what_was_decided_not_the_users_whole_message_or_its_echo() -> None:
    items = [
        Item(1, 1, "anchor", "session/start"),
        Item(2, 2, "user", "Step 4: load data/stock/month-5.csv; it loaded 248 rows in 57 ms. We decided to keep it."),
        Item(3, 3, "assistant", 'Your last message: "Step 4: load data/stock/month-5.csv; we decided to keep it."'),
    ]
    summary, _ = extractive_summary(items)
    assert decided(summary) == ["- Decided: We decided to keep it [#2]."]
    for kept in ("data/stock/month-5.csv", "248 rows", "57 ms", "Step 4"):
        assert kept in summary


def test_a_proposal_the_user_accepted_is_a_decision_citing_both() -> None:
    items = [
        Item(2, 2, "user", "The cache is slow."),
        Item(3, 3, "assistant", "I suggest we store the cache as parquet files. It loads faster."),
        Item(4, 4, "user", "Yes, go ahead."),
    ]
    summary, _ = extractive_summary(items)
    assert decided(summary) == [
        "- Decided: I suggest we store the cache as parquet files (proposed, then accepted) [#3] [#4]."
    ]


def test_a_proposal_nobody_accepted_and_a_question_decide_nothing() -> None:
    items = [
        Item(2, 2, "user", "Should we decide on polars?"),
        Item(3, 3, "assistant", "I suggest polars."),
        Item(4, 4, "user", "Not now, if we decide later that is fine."),
    ]
    assert decided(extractive_summary(items)[0]) == []


def test_a_decision_a_tool_result_confirmed_cites_the_result() -> None:
    items = [
        Item(2, 2, "user", "Make the loader faster."),
        Item(3, 3, "tool_call", 'We will use polars for the loader.\nwrite_config({"engine": "polars"})'),
        Item(4, 4, "tool", "written config.toml"),
        Item(5, 5, "assistant", "Done."),
    ]
    summary, _ = extractive_summary(items)
    assert decided(summary) == ["- Decided: We will use polars for the loader (a tool confirmed it) [#3] [#4]."]
    assert "config.toml" in summary


def test_a_long_phase_keeps_its_numbers_and_paths_within_a_fifth_of_its_tokens(tape: Tape) -> None:
    agent = Agent(tape, model="offline")
    for turn in range(1, 31):
        agent.run(
            f"Run {turn}: read logs/day-{turn}.log, {turn * 7 + 3} errors in {turn * 11} s; "
            f"we decided to retry batch_{turn}. Next, run `make retry N={turn}`."
        )
    phase = sum(count_text_tokens(json.dumps(m, ensure_ascii=False)) for m in tape.view().messages)
    _, anchor, _ = agent.handoff("phase/logs", summarize=True)
    state = anchor.payload["state"]
    assert count_text_tokens(json.dumps(state, ensure_ascii=False)) <= 0.2 * phase
    counts = anchor_retention(tape, anchor.id).counts()
    for kind in ("number", "path"):
        kept, total = counts[kind]
        assert total and kept >= 0.9 * total, (kind, kept, total)


words = st.sampled_from(["load", "the", "table", "rows", "ms", "we", "decided", "to", "keep", "x.csv", "a/b.py"])
sentence = st.lists(st.one_of(words, st.integers(0, 9999).map(str)), min_size=1, max_size=14).map(" ".join)
entries = st.lists(st.tuples(st.sampled_from(["user", "assistant", "tool", "tool_call"]), sentence), max_size=40)


@settings(max_examples=60, deadline=None)
@given(entries)
def test_the_summary_cites_only_its_entries_and_stays_in_its_budget(said: list[tuple[str, str]]) -> None:
    items = [Item(1, 1, "anchor", "session/start")]
    items += [Item(index, index, role, f"{text}.") for index, (role, text) in enumerate(said, start=2)]
    summary, steps = extractive_summary(items)
    assert set(cited_ids(summary + steps)) <= {item.first for item in items}
    size = sum(count_text_tokens(item.text) + 4 for item in items)
    assert count_text_tokens(summary) <= max(FLOOR, SHARE * size) + len(summary.splitlines()) * 2
    assert extractive_summary(items) == (summary, steps)


def test_a_tight_room_cuts_every_other_line_before_a_decision() -> None:
    items = [Item(index, index, "user", f"Fact {index}: the value is {index * 11} ms.") for index in range(2, 9)]
    items.insert(3, Item(20, 20, "user", "We decided to use polars."))
    summary = extractive_phase_summary(Phase(tuple(sorted(items, key=lambda item: item.first))))
    decided = "- Decided: We decided to use polars [#20]."
    assert decided in summary.summary.splitlines() and len(summary.summary.splitlines()) > 3
    # Room for the decision alone: every other line goes first.
    alone = {**Summary.state(summary), "summary": decided, "sources": [20], "uncited": []}
    cut = fitted(summary, count_text_tokens(json.dumps(alone, ensure_ascii=False)) + 2)
    assert cut.summary.splitlines() == [decided]
