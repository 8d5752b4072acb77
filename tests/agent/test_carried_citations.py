"""A line carried from one summary into the next keeps citing the entry it was said in, through any number of
handoffs and across tapes: a citation of the anchor it came through is re-pointed at the line's own source."""

from __future__ import annotations

import pytest

from bub_nb.agent import Agent
from bub_nb.agent.models import OfflineModel, ScriptedModel
from bub_nb.agent.team import Team
from bub_nb.context.retention import anchor_retention
from bub_nb.tape import MemoryTapeStore, Tape
from bub_nb.tape.citations import find_citations, find_references
from bub_nb.tape.reports.transcript import anchors_frame


def say(tape: Tape, user: str, answer: str) -> int:
    said = tape.append_message({"role": "user", "content": user}).id
    tape.append_message({"role": "assistant", "content": answer})
    return said


def summarize(tape: Tape, name: str, reply: str) -> dict:
    return Agent(tape, ScriptedModel([reply])).handoff(name, summarize=True)[1].payload["state"]


def cited(text: str) -> list[int]:
    return [i for citation in find_citations(text) for i in citation.ids]


def test_a_carried_line_cites_its_source_after_three_handoffs() -> None:
    tape = Tape("chain", MemoryTapeStore())
    tape.ensure_bootstrap_anchor()
    budget = say(tape, "The budget is 400 euros for the trip.", "Noted: 400 euros.")
    first = summarize(tape, "phase/1", f"Summary:\nThe budget is 400 euros [#{budget}].")
    one = tape.find_anchor("phase/1").id

    room = say(tape, "The class meets on Thursdays in room 12.", "Thursdays in room 12.")
    # The model repeats the carried line and cites the anchor it read it in.
    second = summarize(
        tape, "phase/2", f"Summary:\n- The budget is 400 euros [#{one}].\n- The class meets in room 12 [#{room}]."
    )
    two = tape.find_anchor("phase/2").id

    train = say(tape, "The train leaves at 07:45 from platform 3.", "07:45, platform 3.")
    third = summarize(
        tape,
        "phase/3",
        f"Summary:\n- Budget: 400 euros [#{two}].\n- Room 12 on Thursdays [#{two}].\n"
        f"- The train leaves at 07:45 [#{train}].",
    )
    three = tape.find_anchor("phase/3").id

    fourth = summarize(tape, "phase/4", f"Summary:\n- The budget is 400 euros for the trip [#{three}].")

    assert cited(first["summary"]) == [budget]
    assert cited(second["summary"]) == [budget, room]
    assert cited(third["summary"]) == [budget, room, train]
    assert cited(fourth["summary"]) == [budget]
    assert fourth["sources"] == [budget] and fourth["unsupported_citations"] == 0
    assert all(anchor not in cited(s["summary"]) for s in (second, third, fourth) for anchor in (one, two, three))


def test_the_offline_model_carries_each_line_with_its_source_through_three_handoffs() -> None:
    tape = Tape("offline-chain", MemoryTapeStore())
    tape.ensure_bootstrap_anchor()
    budget = say(tape, "The budget is 400 euros for the trip.", "Noted: 400 euros.")
    agent = Agent(tape, OfflineModel())
    agent.handoff("phase/1", summarize=True)
    for number in (2, 3, 4):
        say(tape, f"Step {number}: pack the bags.", "Packed.")
        agent.handoff(f"phase/{number}", summarize=True)
    last = tape.find_anchor("phase/4").state or {}
    lines = [line for line in last["summary"].splitlines() if "The budget is 400 euros" in line]
    assert lines and all("Carried over:" in line and cited(line) == [budget] for line in lines)


def test_a_citation_of_the_anchor_for_what_it_did_not_carry_stays() -> None:
    tape = Tape("own", MemoryTapeStore())
    tape.ensure_bootstrap_anchor()
    tape.handoff("phase/1", {"goal": "plan the class trip"})
    anchor = tape.last_id - 1
    said = say(tape, "The budget is 400 euros.", "Noted.")
    state = summarize(
        tape, "phase/2", f"Summary:\nThe goal: plan the class trip [#{anchor}]. Budget 400 euros [#{said}]."
    )
    assert cited(state["summary"]) == [anchor, said]


def test_a_carried_claim_with_another_figure_is_not_pointed_at_the_line_it_differs_from() -> None:
    tape = Tape("figures", MemoryTapeStore())
    tape.ensure_bootstrap_anchor()
    budget = say(tape, "The budget is 400 euros for the trip.", "Noted: 400 euros.")
    summarize(tape, "phase/1", f"Summary:\nThe budget is 400 euros [#{budget}].")
    one = tape.find_anchor("phase/1").id
    room = say(tape, "The class meets in room 12.", "Room 12.")
    state = summarize(tape, "phase/2", f"Summary:\n- The budget is 500 euros [#{one}].\n- Room 12 [#{room}].")
    assert "The budget is 500 euros." in state["summary"] and cited(state["summary"]) == [room]
    assert state["unsupported_citations"] == 1


def test_a_line_carried_from_a_forks_parent_cites_the_parents_entry() -> None:
    store = MemoryTapeStore()
    parent = Tape("parent", store)
    parent.ensure_bootstrap_anchor()
    budget = say(parent, "The budget is 400 euros for the trip.", "Noted: 400 euros.")
    summarize(parent, "phase/1", f"Summary:\nThe budget is 400 euros [#{budget}].")

    child = parent.fork_session("child", from_anchor="phase/1", intention="plan the day")
    address = f"tape://parent/entry/{budget}"
    opening = child.last_anchor()
    assert opening is not None and address in str(opening.state)

    room = say(child, "The class meets in room 12.", "Room 12.")
    state = summarize(
        child, "phase/2", f"Summary:\n- The budget is 400 euros [#{opening.id}].\n- They meet in room 12 [#{room}]."
    )
    assert f"The budget is 400 euros [{address}]." in state["summary"]
    assert cited(state["summary"]) == [room]

    # A third handoff on the fork still names the parent's entry.
    say(child, "Lunch is at noon.", "Noon.")
    second = child.find_anchor("phase/2").id
    state = summarize(
        child, "phase/3", f"Summary:\n- Budget of 400 euros [#{second}].\n- Lunch at noon [#{second + 3}]."
    )
    assert find_references(state["summary"]) == [address]

    report = anchor_retention(child, "phase/3")
    (reference,) = report.references
    assert reference.address == address and reference.entry is not None and reference.entry.id == budget
    assert "400 euros" in str(reference.entry.payload)
    assert report.short().endswith("1 cited on other tapes")
    assert report.frame().attrs["references"] == {address: budget}
    row = anchors_frame(child).set_index("name").loc["phase/3"]
    assert row["references"] == [address]


def test_a_model_cannot_cite_a_tape_address_no_carried_line_names() -> None:
    tape = Tape("made-up", MemoryTapeStore())
    tape.ensure_bootstrap_anchor()
    said = say(tape, "The budget is 400 euros.", "Noted.")
    before = len(tape)
    state = summarize(tape, "phase/1", f"Summary:\nBudget 400 euros [#{said}] [tape://other/entry/3].")
    assert "tape://" not in state["summary"] and state["removed_citations"] == 1
    assert len(tape) == before + 3


@pytest.mark.parametrize("unreadable", ["tape://gone/entry/3", "tape://parent/entry/999"])
def test_the_retention_report_says_when_a_tape_reference_cannot_be_followed(unreadable: str) -> None:
    store = MemoryTapeStore()
    parent = Tape("parent", store)
    parent.ensure_bootstrap_anchor()
    parent.append_message({"role": "user", "content": "hello"})
    tape = Tape("reader", store)
    tape.ensure_bootstrap_anchor()
    tape.handoff("phase/1", {"summary": f"The budget is 400 euros [{unreadable}]."})
    said = say(tape, "Room 12.", "Room 12.")
    opening = tape.find_anchor("phase/1").id
    summarize(tape, "phase/2", f"Summary:\n- The budget is 400 euros [#{opening}].\n- Room 12 [#{said}].")
    report = anchor_retention(tape, "phase/2")
    (reference,) = report.references
    assert reference.entry is None and reference.error
    assert report.short().endswith("1 cited on other tapes, 1 not found")


def test_a_line_another_agent_handed_over_cites_the_senders_entry_after_two_handoffs() -> None:
    tape = Tape("nb", MemoryTapeStore())
    analyst = Agent(tape, "offline", name="analyst")
    reviewer = Agent(tape, "offline", name="reviewer")
    team = Team(tape, [analyst, reviewer])
    analyst.run("The March sales were 120, 95 and 130.")
    asked = next(e.id for e in analyst.tape.read() if e.kind == "message")
    team.handoff(
        "review/1", sender="analyst", to="reviewer", summary=f"The March sales were 120, 95 and 130 [#{asked}]."
    )
    address = f"tape://nb~analyst/entry/{asked}"

    own = reviewer.tape
    opening = own.last_anchor()
    assert opening is not None
    said = say(own, "The mean is 115.", "115, checked.")
    state = summarize(
        own, "phase/2", f"Summary:\n- March sales: 120, 95 and 130 [#{opening.id}].\n- The mean is 115 [#{said}]."
    )
    assert f"March sales: 120, 95 and 130 [{address}]." in state["summary"]
    second = own.find_anchor("phase/2").id
    say(own, "Report it.", "Reported.")
    state = summarize(own, "phase/3", f"Summary:\n- Sales 120, 95 and 130 in March [#{second}].")
    assert find_references(state["summary"]) == [address]
    (reference,) = anchor_retention(own, "phase/3").references
    assert reference.entry is not None and "120, 95 and 130" in str(reference.entry.payload)
