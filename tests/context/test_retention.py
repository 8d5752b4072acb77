"""Retention reports: which artifacts of a phase a summarizing handoff's state kept, and where the lost ones lived."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bub_nb
from bub_nb import Tape
from bub_nb.agent import Agent
from bub_nb.context.artifacts import extract
from bub_nb.context.retention import anchor_retention, report, retention_lines
from bub_nb.errors import BubNbError
from bub_nb.tape import TapeEntry


def kinds(text: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for artifact in extract(text):
        found.setdefault(artifact.kind, []).append(artifact.text)
    return found


def test_each_kind_is_read_from_prose() -> None:
    found = kinds(
        "We decided to keep the outliers. Loading data/raw/sales.csv took 42 ms for 1,200 rows; docs at "
        "https://example.com/guide. Run `pytest tests -q`, then call pd.read_csv() and clean_rows on MaxValue [#12].\n"
        "$ git commit -m done"
    )
    assert found["number"] == ["42 ms", "1,200 rows"]  # the cited id 12 is no number of the phase
    assert found["path"] == ["data/raw/sales.csv"]
    assert found["url"] == ["https://example.com/guide"]
    assert found["command"] == ["pytest tests -q", "git commit -m done"]
    assert found["identifier"] == ["pd.read_csv()", "clean_rows", "MaxValue"]
    assert found["decision"] == ["We decided to keep the outliers."]


def test_a_number_is_kept_only_with_its_unit_and_not_inside_a_longer_number() -> None:
    entries = [TapeEntry(3, "message", {"role": "user", "content": "It took 42 ms and cost 70 tokens."})]
    result = report(entries, {"summary": "It took 42 s; 170 tokens [#3]."})
    assert {f.artifact.text: f.kept for f in result.found} == {"42 ms": False, "70 tokens": False}
    assert report(entries, {"summary": "42ms, 70 tokens"}).counts()["number"] == (2, 2)


def summarized(tape: Tape) -> Agent:
    agent = Agent(tape, model="offline")
    agent.run("Load data/sales.csv: 1,200 rows in 42 ms. We decided to keep the outliers. See https://example.com/doc.")
    agent.run("Then write out/report.parquet with write_report and run `make report`.")
    agent.handoff("phase/1", summarize=True)
    return agent


def test_a_summarizing_handoff_reports_kept_and_lost_with_the_entry_each_lived_in(tape: Tape) -> None:
    summarized(tape)
    frame = bub_nb.retention(tape, "phase/1")
    assert list(frame.columns) == ["kind", "artifact", "kept", "entry"]
    counts = frame.attrs["counts"]
    assert set(counts) == {"number", "path", "url", "identifier", "command", "decision"}
    assert all(kept <= total for kept, total in counts.values())
    anchor = tape.find_anchor("phase/1")
    first, last = anchor.state["range"]  # type: ignore[index]
    assert frame["entry"].between(first, last).all()
    for kind, (kept, total) in counts.items():
        rows = frame[frame["kind"] == kind]
        assert (int(rows["kept"].sum()), len(rows)) == (kept, total)
    assert "data/sales.csv" in set(frame["artifact"])


def test_an_anchor_without_a_summary_or_unknown_is_a_one_line_error(tape: Tape) -> None:
    tape.append_message({"role": "user", "content": "hi"})
    tape.handoff("plain", {"owner": "me"})
    with pytest.raises(BubNbError, match="has no summary"):
        bub_nb.retention(tape, "plain")
    with pytest.raises(BubNbError, match="No anchor 'nowhere'"):
        bub_nb.retention(tape, "nowhere")
    assert retention_lines(tape) == {}


def test_retention_lines_cover_every_summary_by_anchor_id(tape: Tape) -> None:
    summarized(tape)
    anchor = tape.find_anchor("phase/1")
    lines = retention_lines(tape)
    assert list(lines) == [anchor.id]
    assert lines[anchor.id] == anchor_retention(tape, anchor.id).short()
    assert "path " in lines[anchor.id]


# -- properties ---------------------------------------------------------------------------------------

_NAME = st.from_regex(r"[a-z]{2,6}", fullmatch=True)
_ARTIFACT = st.one_of(
    st.builds(lambda n, u: f"{n} {u}", st.integers(0, 99_999), st.sampled_from(["ms", "MB", "rows", "tokens"])),
    st.builds(lambda n: f"{n}%", st.integers(0, 100)),
    st.builds(lambda a, b: f"{a}/{b}.csv", _NAME, _NAME),
    st.builds(lambda a, b: f"https://{a}.org/{b}", _NAME, _NAME),
    st.builds(lambda a, b: f"{a}_{b}", _NAME, _NAME),
    st.builds(lambda a: f"`git checkout {a}`", _NAME),
    st.builds(lambda a, b: f"We decided to keep {a} {b}.", _NAME, _NAME),
)


def phase_of(texts: list[list[str]], first: int) -> list[TapeEntry]:
    return [
        TapeEntry(first + index, "message", {"role": "user", "content": " and ".join(parts) + "."})
        for index, parts in enumerate(texts)
    ]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.lists(_ARTIFACT, min_size=1, max_size=4), min_size=1, max_size=6),
    st.integers(1, 50),
    st.sampled_from(["summary", "next_steps"]),
    st.text(max_size=40),
    st.data(),
)
def test_a_verbatim_copy_is_kept_counts_are_bounded_and_losses_lie_in_the_phase(
    texts: list[list[str]], first: int, key: str, noise: str, data: st.DataObject
) -> None:
    entries = phase_of(texts, first)
    artifacts = [artifact for entry in entries for artifact in extract(entry.payload["content"])]
    copied = data.draw(st.lists(st.sampled_from(artifacts), max_size=6)) if artifacts else []
    summary = "\n".join([*(artifact.text for artifact in copied), noise])
    state: dict[str, Any] = {"summary": "", key: summary, "range": [1, 2], "sources": [first]}
    result = report(entries, state)
    for kept, total in result.counts().values():
        assert 0 <= kept <= total
    assert sum(total for _, total in result.counts().values()) == len(result.found)
    ids = {entry.id for entry in entries}
    assert all(found.entry in ids for found in result.found)  # so every lost one names an entry of the phase
    kept = {(f.artifact.kind, f.artifact.key) for f in result.found if f.kept}
    counted = {(f.artifact.kind, f.artifact.key) for f in result.found}
    for artifact in copied:  # what the phase brought (see the module's rules) and the summary copied is kept
        key = (artifact.kind, artifact.key)
        assert key in kept or key not in counted, (artifact, summary)


def test_times_dates_and_versions_are_one_number_each() -> None:
    found = kinds("The museum opens at 10:00 on 2026-06-06; we need Python 3.11.7, not v1.2.0-rc1, by 7:45 pm.")
    assert found["number"] == ["10:00", "2026-06-06", "3.11.7", "v1.2.0-rc1", "7:45 pm"]
    assert "path" not in found


LESSON = [
    TapeEntry(17, "anchor", {"name": "trip/decided", "state": {"summary": "We chose the train (fact 3)."}}),
    TapeEntry(18, "message", {"role": "user", "content": "Fact 4: the museum opens at 10:00 and takes groups of 12."}),
    TapeEntry(
        19,
        "message",
        {
            "role": "assistant",
            "content": "I received 5 messages:\n- 2. assistant: [Anchor created: trip/decided]: we decided\n"
            "- The anchor `trip/decided` carries: summary: We chose the train (fact 3).\n- 13 tools offered.",
        },
    ),
    TapeEntry(20, "tool_result", {"results": ["Tickets cost 3,000 euros in total."]}),
    TapeEntry(21, "message", {"role": "user", "content": "So we decided to book the 9:15 train."}),
]


def test_only_what_the_phase_brought_counts_numbers_a_person_or_tool_wrote_and_decisions_it_made() -> None:
    result = report(LESSON, {"summary": "Museum 10:00, groups of 12; 3,000 euros; we book the 9:15 train [#21]."},
                    carried_in={"summary": "We chose the train (fact 3)."})  # fmt: skip
    found = {(f.artifact.kind, f.artifact.text): f.entry for f in result.found}
    numbers = sorted(text for kind, text in found if kind == "number")
    # Not "4" (one character), not "5 messages" or "13 tools" (an answer's bookkeeping), never "10" and "00".
    assert numbers == sorted(["10:00", "12", "3,000", "9:15"])
    decisions = [text for kind, text in found if kind == "decision"]
    # Not the echo lines, not "trip/decided", not the train chosen before the phase: the booking it decided.
    assert decisions == ["So we decided to book the 9:15 train."]
    assert result.counts()["number"] == (4, 4) and result.counts()["decision"] == (1, 1)


def test_a_bad_summary_is_reported_as_bad() -> None:
    """The report grades a summary; tried on one known to be bad, it must say what the summary lost."""
    bad = report(LESSON, {"summary": "Fact 4; 10; 00; most 12 [#18]. 5 messages; 13 tools [#19]."},
                 carried_in={"summary": "We chose the train (fact 3)."})  # fmt: skip
    lost = {f.artifact.text for f in bad.lost()}
    assert {"10:00", "3,000", "9:15", "So we decided to book the 9:15 train."} <= lost
    assert bad.counts()["number"] == (1, 4)  # only "12" survives the split time
    assert bad.counts()["decision"] == (0, 1)
    empty = report(LESSON, {"summary": "We talked about a trip."}, carried_in={"summary": "x"})
    assert all(kept == 0 for kept, _ in empty.counts().values()) and empty.lost() == empty.found
