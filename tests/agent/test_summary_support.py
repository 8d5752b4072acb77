"""A model's summary keeps a citation only where the cited entry says the claim: the rest are dropped, counted in
the handoff's state and shown by the retention report."""

from __future__ import annotations

import re

from bub_nb.agent import Agent
from bub_nb.agent.models import ScriptedModel
from bub_nb.agent.summaries.support import supported_citations
from bub_nb.context.retention import anchor_retention
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
