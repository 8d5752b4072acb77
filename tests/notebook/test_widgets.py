"""The notebook widgets on real tapes: the strip, the highlighted window, the live mode picker,
the memory zone and the timeline, in their widget, HTML and terminal forms."""

from __future__ import annotations

import subprocess
import sys
from datetime import date, timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from harness.widgets import find

import bub_nb.memory  # noqa: F401  (registers Tape.memory)
from bub_nb import LAST_ANCHOR, Tape, TapeEntry, open_tape
from bub_nb.agent import Agent, OpenAIModel
from bub_nb.context import build_view, window
from bub_nb.errors import AnchorNotFoundError
from bub_nb.memory import MemoryZoneError
from bub_nb.notebook.widgets import ContextView, MemoryView, TapeTimeline
from bub_nb.tape.entries import is_memory_bound
from bub_nb.testing import OpenAICompatibleServer

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
TODAY = date(2026, 2, 10)


# -- tapes ------------------------------------------------------------------------------------------


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, str]:
    return {"role": "assistant", "content": text}


def run_event(tape: Tape, prompt: int, completion: int) -> None:
    usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
    tape.append_event("run", {"status": "ok", "usage": usage, "model": "offline", "elapsed_ms": 12})


def lesson_tape(home: Path) -> Tape:
    """Two turns, a memory save between them, a handoff, and a turn with a tool call after it."""
    tape = open_tape("lesson", home=home)
    tape.ensure_bootstrap_anchor()
    tape.append_system("You are helpful.")
    tape.append_message(user("What is a tape?"))
    tape.append_message(assistant("An append-only log."))
    run_event(tape, 40, 8)
    tape.memory.save_long_term("The student prefers short answers.")
    tape.handoff("phase/tools", {"summary": "tapes explained"})
    tape.append_message(user("Show the tape info."))
    tape.append_tool_call([{"id": "call_1", "type": "function", "function": {"name": "tape.info", "arguments": "{}"}}])
    tape.append_tool_result(["12 entries"])
    tape.append_message(assistant("It has 12 entries."))
    run_event(tape, 95, 21)
    return tape


@pytest.fixture
def tape(tmp_path: Path) -> Tape:
    return lesson_tape(tmp_path)


# -- reading what the widgets render ----------------------------------------------------------------


class Elements(HTMLParser):
    """Every element's tag, attributes and direct text, in document order."""

    def __init__(self, markup: str) -> None:
        super().__init__()
        self.found: list[dict[str, Any]] = []
        self._open: list[dict[str, Any]] = []
        self.feed(markup)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = {"tag": tag, **{k: v or "" for k, v in attrs}, "text": ""}
        element["classes"] = set(element.get("class", "").split())
        self.found.append(element)
        self._open.append(element)

    def handle_endtag(self, tag: str) -> None:
        while self._open and self._open.pop()["tag"] != tag:
            pass

    def handle_data(self, data: str) -> None:
        if self._open:
            self._open[-1]["text"] += data

    def with_class(self, name: str) -> list[dict[str, Any]]:
        return [e for e in self.found if name in e["classes"]]


def strip_cells(markup: str) -> list[dict[str, Any]]:
    return [cell for cell in Elements(markup).with_class("bub-cell") if "data-entry-id" in cell]


def ids_with(cells: list[dict[str, Any]], css_class: str) -> list[int]:
    return [int(cell["data-entry-id"]) for cell in cells if css_class in cell["classes"]]


def message_ids(markup: str) -> list[int]:
    return [int(row["data-entry-id"]) for row in Elements(markup).with_class("bub-message")]


def widget_html(view: ContextView) -> str:
    return "".join(find(view.widget, part).value for part in ("bub-context-strip", "bub-context-messages"))


# -- the context view -------------------------------------------------------------------------------


def test_strip_has_a_cell_per_entry_coloured_by_kind_with_anchors_marked(tape: Tape) -> None:
    cells = strip_cells(ContextView(tape).to_html())
    entries = tape.read()
    assert [int(c["data-entry-id"]) for c in cells] == [e.id for e in entries]
    assert all(f"bub-kind-{e.kind}" in c["classes"] for c, e in zip(cells, entries, strict=True))
    phase = [e for e in entries if e.kind == "anchor" and not is_memory_bound(e)]
    memory = [e for e in entries if is_memory_bound(e)]
    assert ids_with(cells, "bub-anchor") == [e.id for e in phase]
    assert ids_with(cells, "bub-memory-anchor") == [e.id for e in memory] and memory
    labelled = {c["data-anchor-name"]: c["text"] for c in cells if "bub-anchor" in c["classes"]}
    assert labelled == {e.name: f"{e.id} {e.name}" for e in phase} and len(labelled) == 2
    # Every cell says its entry number: nothing on the strip needs hovering to be read.
    assert all(c["text"].split()[0] == c["data-entry-id"] for c in cells)


def test_last_anchor_window_highlights_exactly_the_views_entries(tape: Tape) -> None:
    context = ContextView(tape)
    view = build_view(tape, LAST_ANCHOR)
    cells = strip_cells(context.to_html())
    assert context.view.entry_ids == view.entry_ids
    assert ids_with(cells, "bub-in-view") == list(view.entry_ids)
    anchor = tape.find_anchor("phase/tools")
    assert ids_with(cells, "bub-in-window") == list(range(anchor.id, tape.last_id + 1))
    assert message_ids(context.to_html()) == list(view.sources)


def test_the_usage_line_names_the_cached_and_reasoning_tokens_the_endpoint_reported(
    openai_server: OpenAICompatibleServer, model: OpenAIModel, tmp_path: Path
) -> None:
    tape = open_tape("cached", home=tmp_path)
    usage = {"prompt_tokens": 120, "completion_tokens": 30, "cached_tokens": 96, "reasoning_tokens": 22}
    openai_server.reply("Cached.", usage=usage)
    Agent(tape, model).run("Tell me")
    context = ContextView(tape)

    (line,) = Elements(context.to_html()).with_class("bub-usage")
    parts = Elements(context.to_html()).with_class("bub-usage-part")
    assert line["data-prompt-tokens"] == "120"
    assert [(p.get("data-cached-tokens"), p.get("data-reasoning-tokens")) for p in parts] == [
        ("96", None),
        (None, "22"),
    ]
    assert "prompt 120 (96 cached) + completion 30 (22 reasoning) = 150 tokens" in context.to_text()


def test_picking_a_mode_rebuilds_the_window_and_the_messages(tape: Tape) -> None:
    context = ContextView(tape)
    picker = find(context.widget, "bub-mode-picker")
    assert picker.value == "last"

    picker.value = "full"
    full = build_view(tape, None)
    assert context.view.mode == "full"
    assert ids_with(strip_cells(widget_html(context)), "bub-in-view") == list(full.entry_ids)
    assert message_ids(widget_html(context)) == list(full.sources)

    find(context.widget, "bub-anchor-picker").value = "session/start"
    assert picker.value == "anchor" and context.view.mode == "anchor:session/start"
    assert message_ids(widget_html(context)) == list(build_view(tape, "session/start").sources)

    picker.value = "window"
    find(context.widget, "bub-window-size").value = 3
    last_three = build_view(tape, window(3))
    assert context.view.mode == "window:3" and len(context.view.messages) == 3
    assert ids_with(strip_cells(widget_html(context)), "bub-in-view") == list(last_three.entry_ids)
    assert message_ids(widget_html(context)) == list(last_three.sources)

    # Two messages would start at a tool result, so its orphaned answer is dropped and marked so.
    find(context.widget, "bub-window-size").value = 2
    assert context.view.dropped and ids_with(strip_cells(widget_html(context)), "bub-dropped") == list(
        context.view.dropped
    )


def test_set_mode_moves_the_picker_and_a_bad_anchor_keeps_the_current_view(tape: Tape) -> None:
    context = ContextView(tape)
    picker = find(context.widget, "bub-mode-picker")
    context.set_mode(None)
    assert picker.value == "full"
    with pytest.raises(AnchorNotFoundError, match="phase/missing"):
        context.set_mode("phase/missing")
    assert context.view.mode == "full" and picker.value == "full"


def test_refresh_shows_what_was_written_since(tape: Tape) -> None:
    context = ContextView(tape)
    context.widget  # noqa: B018  (built, so the dropdown must follow the tape too)
    tape.handoff("phase/review", {"summary": "tools shown"})
    written = tape.append_message(user("Anything else?"))
    assert written.id not in context.view.entry_ids
    find(context.widget, "bub-refresh").click()
    assert context.view.anchor is not None and context.view.anchor.name == "phase/review"
    assert context.view.entry_ids[-1] == written.id
    assert ids_with(strip_cells(widget_html(context)), "bub-in-view")[-1] == written.id
    assert "phase/review" in [value for _, value in find(context.widget, "bub-anchor-picker").options]


def test_a_vanished_anchor_is_reported_in_the_widget_not_raised(tape: Tape) -> None:
    context = ContextView(tape, "phase/tools")
    context.widget  # noqa: B018
    tape.reset()
    context.refresh()
    header = find(context.widget, "bub-context-header").value
    assert "bub-error" in header and "phase/tools" in header
    with pytest.raises(AnchorNotFoundError):
        ContextView(tape, "phase/tools")


def test_a_long_tape_shows_its_last_entries_and_counts_the_rest(tmp_path: Path) -> None:
    tape = open_tape("long", home=tmp_path)
    tape.extend([TapeEntry.anchor("session/start", {"owner": "human"})])
    tape.extend([TapeEntry.message(user(f"note {i}")) for i in range(299)])
    context = ContextView(tape, None, max_entries=50)
    cells = strip_cells(context.to_html())
    assert [int(c["data-entry-id"]) for c in cells] == list(range(251, 301))
    (more,) = Elements(context.to_html()).with_class("bub-more")
    assert more["data-hidden"] == "250" and "250 of them in the window" in more["text"]
    assert "… 250 earlier entries not shown, 250 of them in the window" in context.to_text()


def test_the_text_form_marks_the_window_under_a_strip_of_kinds(tape: Tape) -> None:
    context = ContextView(tape)
    text = str(context)
    lines = text.splitlines()
    glyphs = {"message": "m", "system": "s", "event": "e", "tool_call": "c", "tool_result": "r"}
    strip = "".join(
        ":" if is_memory_bound(e) else "|" if e.kind == "anchor" and e.name else glyphs[e.kind] for e in tape.read()
    )
    row = next(i for i, line in enumerate(lines) if line.strip().startswith("#1 "))
    assert lines[row].split()[-1] == strip
    marks = lines[row + 1][9:]
    sent = {i for i, mark in enumerate(marks) if mark == "^"}
    assert sent == {entry_id - 1 for entry_id in context.view.entry_ids}
    assert "anchors: #1 session/start" in text and "phase/tools" in text
    for message, tokens in zip(context.view.messages, context.view.tokens, strict=True):
        assert any(message["role"] in line and f" {tokens} " in line for line in lines)
    assert f"~{context.view.total_tokens}" in text
    assert "prompt 95 + completion 21 = 116 tokens" in text


def test_a_custom_strategy_stays_selectable_in_the_picker(tape: Tape) -> None:
    context = ContextView(tape, 3)
    picker = find(context.widget, "bub-mode-picker")
    assert picker.value == "window" and find(context.widget, "bub-window-size").value == 3
    assert len(context.view.messages) == 3


def test_anchor_names_are_escaped_in_html(tmp_path: Path) -> None:
    tape = open_tape("escape", home=tmp_path)
    tape.handoff('phase/<b onclick="x">', {"note": "<script>"})
    markup = ContextView(tape).to_html()
    assert "<b onclick" not in markup and "<script>" not in markup
    assert "&lt;b onclick=&quot;x&quot;&gt;" in markup


def summarized_tape(home: Path) -> tuple[Tape, list[int]]:
    """The lesson tape closed with a handoff whose summary cites two of its entries, then one more turn."""
    tape = lesson_tape(home)
    phase = tape.find_anchor("phase/tools").id
    asked, answered = phase + 2, tape.last_id - 1
    summary = f"The user asked for the tape info [#{asked}]. It has 12 entries [#{answered}]. Nothing else."
    state = {"summary": summary, "sources": [asked, answered], "range": [phase + 1, tape.last_id]}
    tape.handoff("phase/review", {**state, "uncited": ["Nothing else."], "summarized_by": "offline"})
    tape.append_message(user("What next?"))
    return tape, [asked, answered]


def test_the_strip_marks_the_entries_the_view_anchors_summary_cites(tmp_path: Path) -> None:
    tape, cited = summarized_tape(tmp_path)
    context = ContextView(tape)
    assert ids_with(strip_cells(context.to_html()), "bub-cited") == cited
    assert ids_with(strip_cells(widget_html(context)), "bub-cited") == cited
    assert f"cited by phase/review: #{cited[0]} #{cited[1]}" in context.to_text()
    assert "outlined: cited by the summary" in context.to_html()  # the legend says so

    # Another anchor's view marks what that anchor cites: a plain handoff cites nothing.
    context.set_mode("phase/tools")
    assert ids_with(strip_cells(context.to_html()), "bub-cited") == []
    assert "cited by" not in context.to_text()


def test_odd_sources_in_a_hand_written_state_mark_only_real_ids(tmp_path: Path) -> None:
    tape = open_tape("odd", home=tmp_path)
    tape.append_message(user("one"))
    tape.handoff("odd", {"sources": [1, "2", None, -3, 99], "summary": ["not", "text"]})
    assert ids_with(strip_cells(ContextView(tape).to_html()), "bub-cited") == [1]
    assert "cited by odd: #1\n" in ContextView(tape).to_text() + "\n"  # #99 is not on the tape
    tape.handoff("cites-in-text", {"summary": "It began with one [#1]."})
    assert ids_with(strip_cells(ContextView(tape).to_html()), "bub-cited") == [1]
    tape.handoff("strange", {"sources": "all of them"})
    assert ids_with(strip_cells(ContextView(tape).to_html()), "bub-cited") == []


def test_the_picker_offers_phases_and_shows_each_earlier_phase(tmp_path: Path) -> None:
    tape, _ = summarized_tape(tmp_path)
    context = ContextView(tape)
    picker = find(context.widget, "bub-mode-picker")
    assert "phases" in [value for _, value in picker.options]
    picker.value = "phases"
    phases = build_view(tape, "phases")
    assert context.view.mode == "phases" and context.view.messages == phases.messages
    assert message_ids(widget_html(context)) == list(phases.sources)
    earlier = [tape.find_anchor("session/start").id, tape.find_anchor("phase/tools").id]
    assert ids_with(strip_cells(widget_html(context)), "bub-in-view")[:2] == earlier
    context.set_mode(LAST_ANCHOR)
    context.set_mode("phases")
    assert picker.value == "phases"


# -- the display contract ---------------------------------------------------------------------------


@pytest.mark.parametrize("make", [ContextView, MemoryView, TapeTimeline], ids=["context", "memory", "timeline"])
def test_displaying_sends_the_widget_static_html_and_text(tape: Tape, make: Any) -> None:
    shown = make(tape)
    bundle = shown._repr_mimebundle_()
    assert set(bundle) == {WIDGET_MIME, "text/html", "text/plain"}
    assert bundle[WIDGET_MIME]["model_id"] == shown.widget.model_id
    assert bundle["text/plain"] == shown.to_text() == str(shown)
    assert bundle["text/html"] == shown.to_html() and "<style>" in bundle["text/html"]


def test_a_terminal_gets_the_text_form_and_no_widget(tape: Tape) -> None:
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    context = ContextView(tape)
    data, _ = shell.display_formatter.format(context, include={"text/plain"})
    assert data == {"text/plain": context.to_text()}
    assert context._widget is None


def test_importing_bub_nb_and_rendering_text_needs_no_ipywidgets(tmp_path: Path) -> None:
    script = (
        "import sys, bub_nb\n"
        "assert 'ipywidgets' not in sys.modules\n"
        "import bub_nb.memory\n"
        "from bub_nb.notebook.widgets import ContextView, MemoryView, TapeTimeline\n"
        f"tape = bub_nb.open_tape('plain', home={str(tmp_path)!r})\n"
        "tape.ensure_bootstrap_anchor()\n"
        "print(ContextView(tape), MemoryView(tape), TapeTimeline(tape))\n"
        "assert 'ipywidgets' not in sys.modules, 'text forms imported ipywidgets'\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "session/start" in done.stdout


# -- the memory view --------------------------------------------------------------------------------


@pytest.fixture
def remembering(tmp_path: Path) -> Tape:
    tape = open_tape("remember", home=tmp_path)
    tape.ensure_bootstrap_anchor()
    memory = tape.memory
    memory.save_long_term("Prefers Python 3.12.")
    memory.append_daily("- explained anchors", TODAY)
    memory.append_daily("- drew the strip", TODAY - timedelta(days=1))
    memory.append_daily("- set up the course", TODAY - timedelta(days=20))
    return tape


def test_memory_view_shows_long_term_today_recent_and_older(remembering: Tape) -> None:
    shown = MemoryView(remembering, today=TODAY)
    text = shown.to_text()
    assert "Prefers Python 3.12." in text
    assert "Today's notes (2026-02-10)" in text and "- explained anchors" in text
    assert "2026-02-09" in text and "- drew the strip" in text
    assert "1 older daily notes" in text
    markup = shown.to_html()
    elements = Elements(markup)
    sections = {"bub-memory-long-term", "bub-memory-today", "bub-memory-recent", "bub-memory-prompt"}
    assert all(elements.with_class(name) for name in sections)
    assert "Prefers Python 3.12." in markup and "- drew the strip" in markup
    assert "&lt;memory&gt;" in markup and "## Today's Notes" in markup


def test_memory_history_lists_every_version_with_its_entries(remembering: Tape) -> None:
    shown = MemoryView(remembering.memory, today=TODAY)
    history = remembering.memory.history()
    rows = Elements(shown.to_html()).with_class("bub-memory-version")
    assert [int(r["data-version"]) for r in rows] == [v.version for v in reversed(history)]
    assert [r["data-entry-ids"] for r in rows] == [" ".join(map(str, v.entry_ids)) for v in reversed(history)]
    assert [("bub-current" in r["classes"]) for r in rows] == [v.current for v in reversed(history)]
    text = shown.to_text()
    for version in history:
        assert f"#{version.open_id}–#{version.seal_id} ({len(version.entry_ids)})" in text


def test_memory_view_browses_older_versions_and_refreshes(remembering: Tape) -> None:
    shown = MemoryView(remembering, today=TODAY)
    versions = find(shown.widget, "bub-memory-version")
    versions.value = 1
    assert shown.snapshot.version == 1 and shown.snapshot.dailies == ()
    assert "older version" in shown.to_text()
    versions.value = 0
    remembering.memory.save_long_term("Prefers Python 3.13.")
    find(shown.widget, "bub-refresh").click()
    assert shown.snapshot.long_term == "Prefers Python 3.13."
    assert len(shown.history) == len(remembering.memory.history())
    with pytest.raises(MemoryZoneError, match="Memory version 99"):
        shown.show_version(99)


def test_memory_view_of_a_tape_without_memory_says_so(tmp_path: Path) -> None:
    tape = open_tape("blank", home=tmp_path)
    text = MemoryView(tape).to_text()
    assert "empty (no zone written yet)" in text and "(no versions yet)" in text


# -- the timeline -----------------------------------------------------------------------------------


def test_timeline_counts_phases_and_each_turns_tokens(tape: Tape) -> None:
    timeline = TapeTimeline(tape)
    elements = Elements(timeline.to_html())
    phases = elements.with_class("bub-phase")
    assert [p["data-anchor"] for p in phases] == ["session/start", "phase/tools"]
    assert sum(int(p["data-entries"]) for p in phases) == len(tape)
    turns = elements.with_class("bub-turn")
    assert [(t["data-prompt-tokens"], t["data-completion-tokens"]) for t in turns] == [("40", "8"), ("95", "21")]
    text = timeline.to_text()
    assert "2 turns" in text and "135 prompt + 29 completion tokens reported" in text
    assert "anchor phase/tools" in text


def test_timeline_buckets_entries_over_time_and_marks_anchors(tmp_path: Path) -> None:
    tape = open_tape("days", home=tmp_path)
    stamps = ["2026-02-01T10:00:00+00:00", "2026-02-01T10:05:00+00:00", "2026-02-03T22:00:00+00:00"]
    tape.extend(
        [
            TapeEntry(0, "anchor", {"name": "session/start"}, {}, stamps[0]),
            TapeEntry(0, "message", user("hello"), {}, stamps[1]),
            TapeEntry(0, "anchor", {"name": "phase/later"}, {}, stamps[2]),
        ]
    )
    timeline = TapeTimeline(tape)
    columns = Elements(timeline.to_html()).with_class("bub-column")
    assert timeline.activity.step == "6 hours"
    assert columns[0]["data-start"] == "2026-02-01T06:00:00+00:00"
    assert columns[-1]["data-start"] == "2026-02-03T18:00:00+00:00" and len(columns) == 11
    assert [int(c["data-entries"]) for c in columns if int(c["data-entries"])] == [2, 1]
    assert "anchor phase/later" in timeline.to_text()
    assert timeline.to_html().count('class="bub-tick"') == 2


def test_timeline_refresh_counts_new_turns(tape: Tape) -> None:
    timeline = TapeTimeline(tape)
    timeline.widget  # noqa: B018
    run_event(tape, 120, 30)
    find(timeline.widget, "bub-refresh").click()
    assert [t.prompt_tokens for t in timeline.activity.turns] == [40, 95, 120]
    assert 'data-prompt-tokens="120"' in find(timeline.widget, "bub-timeline").children[1].value


def test_memory_view_names_each_day_once(remembering: Tape) -> None:
    shown = MemoryView(remembering, today=TODAY)
    text, markup = shown.to_text(), shown.to_html()
    for day in (TODAY, TODAY - timedelta(days=1)):
        assert text.count(day.isoformat()) == 1, text
        assert f"<pre># {day.isoformat()}" not in markup  # the notes sections; the prompt block keeps it
    assert "- explained anchors" in text and "- drew the strip" in markup


def test_a_widget_must_give_every_form_it_is_displayed_in() -> None:
    from bub_nb.notebook.widgets._display import WidgetDisplay

    class TextOnly(WidgetDisplay):
        def to_text(self) -> str:
            return "text"

    with pytest.raises(TypeError, match=r"abstract methods? '?_build_widget'?, '?to_html"):
        TextOnly()  # type: ignore[abstract]


def test_a_context_view_labels_the_usage_it_shows_by_the_view_that_turn_was_sent_with(tmp_path: Path) -> None:
    from bub_nb.agent import Agent

    tape = open_tape("usage-label", home=tmp_path)
    agent = Agent(tape, "offline")
    agent.run("Fact 1")
    tape.handoff("lesson/1", {"summary": "fact 1"})
    agent.run("Fact 2")
    assert "Last turn sent with this view (#" in ContextView(tape).to_html()
    wider = ContextView(tape, "session/start")
    assert "Last turn among these entries, sent with another view ([last-anchor] from #" in wider.to_html()
    assert "last turn among these entries, sent with another view" in wider.to_text()
    assert "Last run in this view" not in wider.to_html()


def test_the_strip_marks_what_the_view_anchors_summary_lost_with_a_tooltip_and_a_text_line(tmp_path: Path) -> None:
    tape = open_tape("lost", home=tmp_path)
    tape.ensure_bootstrap_anchor()
    loaded = tape.append_message(user("Load data/sales.csv: 1,200 rows in 42 ms.")).id
    kept = tape.append_message(assistant("Loaded into sales_frame.")).id
    summary = f"Loaded sales_frame [#{kept}]."
    tape.handoff("phase/loaded", {"summary": summary, "sources": [kept], "range": [1, kept]})
    context = ContextView(tape)
    cells = strip_cells(context.to_html())
    assert ids_with(cells, "bub-lost") == [loaded] == ids_with(strip_cells(widget_html(context)), "bub-lost")
    tip = next(cell["title"] for cell in cells if int(cell["data-entry-id"]) == loaded)
    assert "Lost by the summary: 1,200 rows (number), 42 ms (number), data/sales.csv (path)" in tip
    assert f"lost by the summary of phase/loaded: #{loaded} 1,200 rows (number)" in context.to_text()
    assert "lost by the summary (listed below)" in context.to_html()  # the legend says so, and lists them in words:
    assert f"Lost by the summary of phase/loaded: #{loaded} 1,200 rows (number)" in context.to_html()
    assert "hover" not in context.to_html()
    context.set_mode("session/start")  # a view from an anchor without a summary marks nothing
    assert ids_with(strip_cells(context.to_html()), "bub-lost") == [] and "lost by" not in context.to_text()


def test_a_summary_shows_as_text_with_referenced_citations_in_the_context_view_and_the_timeline(
    tmp_path: Path,
) -> None:
    tape, cited = summarized_tape(tmp_path)
    context = ContextView(tape)
    markup = context.to_html()
    anchor_row = Elements(markup).with_class("bub-message")[0]
    assert int(anchor_row["data-entry-id"]) == tape.find_anchor("phase/review").id
    assert "[Anchor created: phase/review] summary: The user asked for the tape" in context.to_text()
    assert f'<a class="bub-cite" href="#entry-{cited[0]}" data-entry-id="{cited[0]}"' in markup
    row = markup[markup.index(f'<tr class="bub-message" data-entry-id="{anchor_row["data-entry-id"]}"') :]
    row = row[: row.index("</tr>")]
    assert "<details><summary>raw state</summary>" in row
    assert "&quot;summary&quot;" not in row.split("raw state")[0]  # no JSON before the fold
    timeline = TapeTimeline(tape)
    assert f'data-entry-id="{cited[1]}"' in timeline.to_html() and "raw state" in timeline.to_html()
    assert "    summary: The user asked for the tape info" in timeline.to_text()
