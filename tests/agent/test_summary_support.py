"""A model's summary keeps a citation only where the cited entry says the claim: the rest are dropped, counted in
the handoff's state and shown by the retention report."""

from __future__ import annotations

import re

import pytest

from bub_nb.agent import Agent
from bub_nb.agent.models import ScriptedModel
from bub_nb.agent.summaries.support import supported_citations
from bub_nb.context.retention import anchor_retention
from bub_nb.errors import BubNbError
from bub_nb.tape import MemoryTapeStore, Tape


def phase_tape() -> tuple[Tape, dict[str, int]]:
    tape = Tape("support", MemoryTapeStore())
    tape.ensure_bootstrap_anchor()
    ids = {
        "budget": tape.append_message({"role": "user", "content": "The budget is 400 euros for the trip."}).id,
        "answer": tape.append_message({"role": "assistant", "content": "Noted: 400 euros."}).id,
        "day": tape.append_message({"role": "user", "content": "The class meets on Thursdays in room 12."}).id,
        "ok": tape.append_message({"role": "assistant", "content": "Thursdays in room 12, then."}).id,
    }
    return tape, ids


def test_a_citation_that_does_not_say_the_claim_is_dropped_and_counted() -> None:
    tape, ids = phase_tape()
    good, bad, range_good = ids["budget"], ids["answer"], f"{ids['day']}-#{ids['ok']}"
    reply = (
        "Summary:\n"
        f"- The budget is 400 euros [#{good}].\n"
        f"- The class meets on Thursdays [#{bad}].\n"  # the assistant's note on the budget says nothing of it
        f"- Room 12 on Thursdays [#{range_good}].\n\n"
        f"Next steps:\nBook the trip within budget [#{ids['day']}]."
    )
    model = ScriptedModel([reply])
    before = len(tape)
    written = Agent(tape, model).handoff("phase/2", summarize=True)
    state = written[1].payload["state"]

    assert len(tape) == before + len(written)
    assert f"The budget is 400 euros [#{good}]." in state["summary"]
    assert "The class meets on Thursdays." in state["summary"] and f"[#{bad}]" not in state["summary"]
    assert f"Room 12 on Thursdays [#{range_good}]." in state["summary"]
    assert state["next_steps"] == "Book the trip within budget."
    assert state["unsupported_citations"] == 2
    assert bad not in state["sources"] and good in state["sources"]

    report = anchor_retention(tape, "phase/2")
    assert report.unsupported_citations == 2
    assert report.short().endswith("2 unsupported citations dropped")
    assert report.frame().attrs["unsupported_citations"] == 2


def test_a_summary_whose_every_citation_holds_drops_none() -> None:
    tape, ids = phase_tape()
    reply = f"Summary:\nThe budget is 400 euros [#{ids['budget']}]. The class meets on Thursdays. [#{ids['day']}]"
    state = Agent(tape, ScriptedModel([reply])).handoff("phase/2", summarize=True)[1].payload["state"]
    assert state["unsupported_citations"] == 0
    assert re.findall(r"\[#(\d+)\]", state["summary"]) == [str(ids["budget"]), str(ids["day"])]
    assert "unsupported" not in anchor_retention(tape, "phase/2").short()


def test_a_claim_is_the_text_since_the_last_citation_and_unknown_entries_are_left_alone() -> None:
    entries = {3: "We chose DuckDB for the tables.", 4: "Plots go in the figures folder."}
    checked = supported_citations("DuckDB for tables [#3] and plots in figures [#4]; older [#1].", entries)
    assert checked.text == "DuckDB for tables [#3] and plots in figures [#4]; older [#1]."
    swapped = supported_citations("DuckDB for tables [#4] and plots in figures [#3].", entries)
    assert swapped.text == "DuckDB for tables and plots in figures."
    assert [cited for cited, _ in swapped.dropped] == ["[#4]", "[#3]"]


def test_numbers_and_paths_must_be_the_cited_entrys_own() -> None:
    entries = {
        1: "The budget is 400 euros for the trip.",
        2: "The routes live in src/app.py, next to the models.",
        3: "Loaded 1200 rows from the sales table.",
        4: "We chose DuckDB for the tables.",
    }
    wrong_number = supported_citations("The budget is 500 euros for the trip [#1].", entries)
    wrong_path = supported_citations("The routes live in src/api.py [#2].", entries)
    assert wrong_number.dropped == (("[#1]", "The budget is 500 euros for the trip"),)
    assert wrong_path.dropped == (("[#2]", "The routes live in src/api.py"),)
    # The same figure written another way, and words in another case, still hold.
    same = supported_citations("1,200 rows loaded [#3]. DUCKDB for the TABLES [#4].", entries)
    assert same.dropped == () and same.text == "1,200 rows loaded [#3]. DUCKDB for the TABLES [#4]."
    # A list's mark is no figure of the claim.
    assert supported_citations("1) The budget is 400 euros [#1].", entries).dropped == ()


def test_the_retention_report_of_a_summary_of_pleasantries_says_what_it_lost() -> None:
    tape = Tape("bad", MemoryTapeStore())
    tape.ensure_bootstrap_anchor()
    said = {
        "load": tape.append_message({"role": "user", "content": "Load data/sales.csv: it has 1,200 rows."}).id,
        "done": tape.append_message({"role": "assistant", "content": "Loaded 1,200 rows in 42 ms."}).id,
        "pick": tape.append_message({"role": "user", "content": "We decided to keep the outliers."}).id,
        "thanks": tape.append_message({"role": "assistant", "content": "Thanks, happy to help with the sales!"}).id,
    }
    reply = (
        "Summary:\n"
        f"- Thanks, happy to help [#{said['thanks']}].\n"
        f"- It was a pleasant chat [#{said['load']}].\n"  # pleasantries cited to entries that say none of it
        f"- Everyone was very kind [#{said['pick']}]."
    )
    state = Agent(tape, ScriptedModel([reply])).handoff("phase/2", summarize=True)[1].payload["state"]
    assert state["sources"] == [said["thanks"]] and state["unsupported_citations"] == 2

    report = anchor_retention(tape, "phase/2")
    assert report.short() == "number 0/1 · path 0/1 · decision 0/1 · 2 unsupported citations dropped"
    assert {found.artifact.text for found in report.lost()} >= {"data/sales.csv", "1,200 rows"}


def test_a_summary_none_of_whose_citations_hold_is_refused_and_writes_nothing() -> None:
    tape, ids = phase_tape()
    before = len(tape)
    reply = f"Summary:\nWhat a lovely conversation [#{ids['budget']}]. Thanks again [#{ids['day']}]."
    with pytest.raises(BubNbError, match="cites no entry"):
        Agent(tape, ScriptedModel([reply])).handoff("phase/2", summarize=True)
    assert len(tape) == before
