"""Retention reports: which artifacts of a phase a summarising handoff's state kept, and where the lost ones lived."""

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
    entries = [TapeEntry(3, "message", {"role": "user", "content": "It took 42 ms and cost 7 tokens."})]
    result = report(entries, {"summary": "It took 42 s; 17 tokens [#3]."})
    assert {f.artifact.text: f.kept for f in result.found} == {"42 ms": False, "7 tokens": False}
    assert report(entries, {"summary": "42ms, 7 tokens"}).counts()["number"] == (2, 2)


def summarised(tape: Tape) -> Agent:
    agent = Agent(tape, model="offline")
    agent.run("Load data/sales.csv: 1,200 rows in 42 ms. We decided to keep the outliers. See https://example.com/doc.")
    agent.run("Then write out/report.parquet with write_report and run `make report`.")
    agent.handoff("phase/1", summarize=True)
    return agent


def test_a_summarising_handoff_reports_kept_and_lost_with_the_entry_each_lived_in(tape: Tape) -> None:
    summarised(tape)
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
    summarised(tape)
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
    for artifact in copied:
        assert (artifact.kind, artifact.key) in kept, (artifact, summary)
