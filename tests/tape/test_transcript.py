"""The Markdown transcript of a tape: what each run and each memory save said, nothing made up."""

from __future__ import annotations

import shutil
from html.parser import HTMLParser
from pathlib import Path

import mistune
import pandas as pd
from harness.tapes import link_citations

import bub_nb  # noqa: F401  (registers Tape.memory)
from bub_nb.tape import Tape, TapeEntry, open_tape
from bub_nb.tape.citations import cited_ids
from bub_nb.tape.events import handoff_entries
from bub_nb.tape.reports.transcript import anchors_frame, transcript_markdown

BUB_TAPE = Path(__file__).resolve().parents[2] / "examples/data/bub-home/tapes/494727f0da168296__0898b22730d57afc.jsonl"


def test_a_bub_tape_run_without_a_time_shows_no_none(tmp_path: Path) -> None:
    transcript = transcript_markdown(open_tape(shutil.copy(BUB_TAPE, tmp_path)))
    runs = [line for line in transcript.splitlines() if line.startswith("<sub>run ")]
    assert runs and all("None" not in line and " ms" not in line for line in runs)
    assert "<sub>run ok · gpt-4o-mini, 2560 tokens</sub>" in runs


def test_a_run_with_a_time_shows_it(tmp_path: Path) -> None:
    tape = open_tape("timed", home=tmp_path)
    tape.append_event("run", {"status": "ok", "model": "offline", "elapsed_ms": 12.4, "usage": None})
    assert "<sub>run ok · offline · 12 ms</sub>" in transcript_markdown(tape)


def test_the_transcript_shows_what_memory_saved(tmp_path: Path) -> None:
    tape = open_tape("memory", home=tmp_path)
    tape.memory.save_long_term("Prefers pandas")
    tape.memory.append_daily("met the class", date="2026-02-10")
    transcript = transcript_markdown(tape)
    assert "*memory.long_term* · #" in transcript and "> Prefers pandas" in transcript
    assert "*memory.daily* 2026-02-10" in transcript and "> met the class" in transcript
    assert "*memory.seal* v2" in transcript


class Links(HTMLParser):
    """The link targets and element ids of rendered HTML."""

    def __init__(self, markup: str) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.ids: set[str] = set()
        self.feed(markup)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "a" and found.get("href"):
            self.hrefs.append(found["href"] or "")
        if found.get("id"):
            self.ids.add(found["id"] or "")


def summarized(tmp_path: Path) -> Tape:
    """A phase summarized with citations of a message, a run of entries, and a system prompt (no block of its own)."""
    tape = open_tape("cited", home=tmp_path)
    tape.ensure_bootstrap_anchor()
    system = tape.append_system("You are helpful.").id
    asked = tape.append_message({"role": "user", "content": "Which plot?"}).id
    answered = tape.append_message({"role": "assistant", "content": "A histogram."}).id
    summary = (
        f"The user asked which plot to use [#{asked}]. A histogram was chosen [#{asked}-#{answered}]. "
        f"The prompt was plain [#{system}]. Nothing else."
    )
    state = {
        "summary": summary,
        "next_steps": f"Draw it [#{answered}].",
        "sources": [system, asked, answered],
        "range": [system, answered],
        "summarized_by": "offline",
        "uncited": ["Nothing else."],
        "removed_citations": 1,
        "goal": "plots",
    }
    tape.handoff("phase/2", state)
    tape.append_message({"role": "user", "content": "Draw it."})
    return tape


def test_the_export_prints_each_summary_with_citations_linked_to_the_entries(tmp_path: Path) -> None:
    tape = summarized(tmp_path)
    transcript = transcript_markdown(tape)
    anchor = tape.find_anchor("phase/2")
    state = anchor.state or {}
    summary_line = next(line for line in transcript.splitlines() if line.startswith("**Summary**"))
    first, last = state["range"]
    assert summary_line.startswith(f"**Summary** of [[#{first}-#{last}]](#entry-{first}) · by offline: ")
    assert summary_line.endswith(link_citations(state["summary"], lambda i: f"#entry-{i}"))
    assert link_citations(state["next_steps"], lambda i: f"#entry-{i}") in transcript
    assert "- **goal**: plots" in transcript and "- **removed_citations**: 1" in transcript
    assert '- **uncited**: ["Nothing else."]' in transcript
    assert "- **sources**" not in transcript  # the links show them

    # Rendered as Jupyter's nbconvert renders Markdown, every link lands on an element with that id.
    rendered = Links(mistune.html(transcript))
    cited = {f"#entry-{i}" for i in cited_ids(state["summary"] + state["next_steps"])} | {f"#entry-{first}"}
    assert cited <= set(rendered.hrefs)
    assert all(href.removeprefix("#") in rendered.ids for href in rendered.hrefs if href.startswith("#"))
    assert rendered.ids == {f"entry-{i}" for i in [*state["sources"], first]}  # only what is linked to


def test_a_transcript_without_summaries_carries_no_link_targets(tmp_path: Path) -> None:
    tape = open_tape("plain", home=tmp_path)
    tape.ensure_bootstrap_anchor()
    tape.append_message({"role": "user", "content": "hi [#1]"})
    tape.handoff("phase/1", {"goal": "plain"})
    assert "<a id=" not in transcript_markdown(tape) and "](#entry-" not in transcript_markdown(tape)


def test_a_citation_of_an_entry_not_on_the_tape_stays_plain_and_odd_states_still_print(tmp_path: Path) -> None:
    tape = open_tape("odd", home=tmp_path)
    tape.append_message({"role": "user", "content": "hi"})
    # Written as another writer would: the API refuses a citation past the tape's last id.
    tape.extend(handoff_entries("hand", {"summary": "Greeted [#1], then more [#999].", "range": "all", "sources": "x"}))
    tape.handoff("odder", {"summary": {"text": "not a string"}, "next_steps": 7})
    transcript = transcript_markdown(tape)
    assert "**Summary**: Greeted [[#1]](#entry-1), then more [#999]." in transcript
    assert "- **range**: all" in transcript
    assert '- **summary**: {"text":"not a string"}' in transcript and "- **next_steps**: 7" in transcript
    rendered = Links(mistune.html(transcript))
    assert rendered.hrefs == ["#entry-1"] and "entry-1" in rendered.ids


def test_anchors_list_sources_and_uncited_in_python_and_in_the_frame(tmp_path: Path) -> None:
    tape = summarized(tmp_path)
    tape.handoff("plain", {"goal": "no summary"})
    summary, plain = tape.anchors()[-2:]
    assert summary.sources == tuple(summary.state["sources"])  # type: ignore[index]
    assert summary.uncited == ("Nothing else.",) and plain.sources == () and plain.uncited is None
    assert f"cites #{summary.sources[0]}" in summary.to_markdown() and "1 uncited" in summary._repr_html_()
    assert "cites" not in plain.to_markdown()
    frame = anchors_frame(tape).set_index("name")
    assert frame.loc["phase/2", "sources"] == list(summary.sources) and frame.loc["phase/2", "uncited"] == 1
    assert frame.loc["plain", "sources"] == [] and pd.isna(frame.loc["plain", "uncited"])
    assert str(frame["uncited"].dtype) == "Int64"


def test_entries_until_next_counts_the_entries_of_the_anchors_phase_past_memory_anchors(tmp_path: Path) -> None:
    tape = open_tape("phases", home=tmp_path)
    tape.ensure_bootstrap_anchor()  # 1, 2
    tape.append(TapeEntry.anchor("memory/open", {"version": 1}))  # 3
    tape.append_message({"role": "user", "content": "a"})  # 4
    tape.handoff("phase/1")  # 5, 6
    tape.append_message({"role": "user", "content": "b"})  # 7
    frame = anchors_frame(tape).set_index("name")
    assert frame.loc["session/start", "entries_until_next"] == 3  # #2-#4: the memory anchor is in its phase
    assert frame.loc["memory/open", "entries_until_next"] == 1  # #4, up to phase/1
    assert frame.loc["phase/1", "entries_until_next"] == 2


def test_a_summary_written_as_a_list_renders_as_one_and_its_raw_state_is_one_click_away(tmp_path: Path) -> None:
    tape = open_tape("listed", home=tmp_path)
    asked = tape.append_message({"role": "user", "content": "Load data/a.csv."}).id
    summary = f"- Asked: load data/a.csv [#{asked}].\n- Decided: keep it [#{asked}]."
    tape.handoff("phase/1", {"summary": summary, "next_steps": "", "range": [asked, asked], "summarized_by": "x"})
    transcript = transcript_markdown(tape)
    assert f"**Summary** of [[#{asked}]](#entry-{asked}) · by x:\n\n- Asked: load data/a.csv" in transcript
    assert "**next_steps**" not in transcript.split("<details>")[0]  # an empty text is no line
    rendered = mistune.html(transcript)
    assert rendered.count("<li>") == 2 and "<details><summary>raw state</summary>" in rendered
    assert "&quot;next_steps&quot;: &quot;&quot;" in rendered or '"next_steps": ""' in transcript


def test_the_transcript_marks_what_was_retracted_and_says_why(tmp_path: Path) -> None:
    tape = open_tape("retracted", home=tmp_path)
    tape.append_message({"role": "user", "content": "The west region had 4,000,000 rows."})
    wrong = tape.append_message({"role": "assistant", "content": "Noted: 4,000,000 rows."})
    tape.append_message({"role": "user", "content": "Which region grew fastest?"})
    tape.retract(f"{wrong.id - 1}-{wrong.id}", reason="the figure was wrong")
    text = transcript_markdown(tape)
    assert f"*(retracted)* **User** · #{wrong.id - 1}" in text and f"*(retracted)* **Assistant** · #{wrong.id}" in text
    assert f"*(retracted)* **User** · #{wrong.id + 1}" not in text and "the figure was wrong" in text
    tape.unretract(wrong.id - 1)
    assert transcript_markdown(tape).count("*(retracted)*") == 1
