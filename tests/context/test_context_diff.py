"""Context diffs: entries that entered, left and stayed between two views, tokens by source, the widget
and ``%context --turn`` / ``--diff`` on a real IPython shell."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harness.shell import Notebook
from IPython.core.error import UsageError

import bub_nb
from bub_nb import ContextDiff, diff_views
from bub_nb.agent import Agent
from bub_nb.agent.models import OpenAIModel
from bub_nb.context import SOURCES, TurnOf, tokens_by_source
from bub_nb.context.tokens import REPLY_PRIMING
from bub_nb.errors import ContextError
from bub_nb.notebook.widgets import ContextDiffView, ContextView
from bub_nb.notebook.widgets.context_diff import CHUNK
from bub_nb.tape import Tape
from bub_nb.testing import OpenAICompatibleServer

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart.ipynb"


def quickstart_cells() -> list[str]:
    cells = json.loads(QUICKSTART.read_text())["cells"]
    return ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "code"]


@pytest.fixture
def quickstart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Notebook]:
    """The quickstart's code, run cell by cell on a real shell with the offline model."""
    from IPython.core.interactiveshell import InteractiveShell

    monkeypatch.setenv("BUB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("BUB_MODEL", "offline")
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.chdir(tmp_path)
    InteractiveShell.clear_instance()
    notebook = Notebook(InteractiveShell.instance())
    for source in quickstart_cells():
        notebook.run(source)
    yield notebook
    notebook.run("%unload_ext bub_nb")
    InteractiveShell.clear_instance()


def test_last_against_full_on_the_quickstart_leaves_exactly_the_entries_before_the_handoff(
    quickstart: Notebook,
) -> None:
    tape = quickstart.tape
    lesson = tape.find_anchor("lesson/1").id
    full, last = tape.view(None), tape.view()
    sent_before = tuple(i for i in full.entry_ids if i < lesson)
    assert sent_before, "the quickstart sends nothing before its handoff"

    diff = diff_views(full, last)  # from the full tape to the view that starts at lesson/1
    assert diff.left == sent_before
    assert diff.entered == ()
    assert diff.stayed == tuple(i for i in full.entry_ids if i >= lesson) == last.entry_ids
    assert diff_views(last, full).entered == sent_before and diff_views(last, full).left == ()
    assert diff.token_change["anchor state"] < 0 and diff.token_change["messages"] < 0
    # The cell the quickstart shows says the same.
    shown = quickstart.shown()
    assert f"left     {len(sent_before):>4}" in shown


def test_tokens_by_source_add_up_and_follow_tools_memory_and_anchors(
    openai_server: OpenAICompatibleServer, tape: Tape, model: OpenAIModel
) -> None:
    agent = Agent(tape, model)
    openai_server.reply("First.")
    agent.run("Hello")
    tape.memory.save_long_term("The user likes plots with a title.")
    tape.handoff("phase/plots", {"summary": "We talked about plots"})
    openai_server.reply_tool_calls([{"name": "tape_info", "arguments": {}}])
    openai_server.reply("Second.")
    agent.run("How long is the tape?")

    before, after = tape.view_of_turn(-2), tape.view_of_turn(-1)
    for view in (before, after, tape.view(None)):
        assert sum(tokens_by_source(view).values()) == view.total_tokens  # what %context shows, priming included
        assert tokens_by_source(view)["reply priming"] == REPLY_PRIMING
    change = diff_views(before, after).token_change
    assert set(change) == set(SOURCES)
    assert change["memory block"] > 0  # the saved note reached the second turn's system prompt
    assert change["tool results"] > 0 and change["anchor state"] != 0
    assert tokens_by_source(tape.view())["system prompt"] == 0  # a mode's view carries no system prompt
    diff = diff_views(before, after)
    assert set(diff.left) == set(before.entry_ids) - set(after.entry_ids) and diff.left
    assert diff.a == f"turn #{before.run_entry_id}" and diff.b == f"turn #{after.run_entry_id}"


def test_a_diff_shows_as_text_markdown_and_html(tape: Tape) -> None:
    tape.ensure_bootstrap_anchor()
    tape.append_message({"role": "user", "content": "one"})
    tape.handoff("phase/two", {"summary": "one was said"})
    tape.append_message({"role": "user", "content": "two"})
    diff = bub_nb.diff_views(tape.view("full"), tape.view("last"))
    assert isinstance(diff, ContextDiff) and "diff_views" in bub_nb.__all__ and "ContextDiff" in bub_nb.__all__
    left = " ".join(f"#{i}" for i in diff.left)
    assert diff.left == (1, 3) and left == "#1 #3"
    text = str(diff)
    assert re.search(r"left\s+2\s+#1, #3", text) and "full → last-anchor" in text
    assert "| left | 2 | #1, #3 |" in diff.to_markdown()
    assert '<tr class="bub-diff-left"><td>left</td>' in diff._repr_html_()
    for source in SOURCES:
        assert source in text


def test_the_diff_widget_aligns_both_strips_and_marks_what_entered_and_left(tape: Tape) -> None:
    tape.ensure_bootstrap_anchor()
    tape.append_message({"role": "user", "content": "one"})
    tape.handoff("phase/two", {"summary": "one was said"})
    tape.append_message({"role": "user", "content": "two"})
    shown = ContextDiffView(tape, "last", "full")
    page = shown.to_html()
    side = r'<div class="bub-diff-side" data-side="(a|b)" data-chunk="0">(.*?)</div></div>'
    sides = re.findall(side, page, re.DOTALL)
    assert [side for side, _ in sides] == ["a", "b"]
    (_, a), (_, b) = sides
    ids = re.compile(r'data-entry-id="(\d+)"')
    assert ids.findall(a) == ids.findall(b) == [str(e.id) for e in tape.read()]  # aligned entry for entry
    assert re.findall(r'class="[^"]*bub-entered[^"]*" data-entry-id="(\d+)"', b) == ["1", "3"]
    assert "bub-entered" not in a and "bub-left" not in page.split('data-side="b"')[1].split("bub-diff-key")[0]
    marks = {line[:4]: line[9:] for line in shown.to_text().splitlines() if line.startswith(("  a ", "  b "))}
    # Entries: anchor, event, message, anchor, event, message; the full tape adds #1 and #3.
    assert marks["  a "] == "   ^ ^" and marks["  b "] == "+ +^ ^"
    tape.append_message({"role": "user", "content": "three"})
    assert shown.refresh().entered == (1, 3) and shown.diff.stayed == (4, 6, 7)
    widget = shown.widget
    assert "bub-context-diff" in widget._dom_classes


def test_a_side_that_names_nothing_is_one_clear_error(tape: Tape) -> None:
    tape.ensure_bootstrap_anchor()
    with pytest.raises(ContextError, match="no turn -1"):
        ContextDiffView(tape, "turn:-1", "last")
    with pytest.raises(ContextError, match="A turn needs a position"):
        ContextDiffView(tape, "turn:", "last")


# -- the magics ---------------------------------------------------------------------------------------


def plain(output: Any) -> str:
    data: dict[str, Any] = output["data"]
    return str(data.get("text/plain", ""))


def test_context_turn_shows_what_the_last_turn_sent(nb: Notebook) -> None:
    nb.run("%%bub\nHello there")
    nb.run("%handoff phase/next summary=greeted")
    nb.run("%%bub\nAnd now?")
    nb.run("%context --turn -1")
    shown = plain(nb.displays.outputs[-1])
    turn = nb.tape.view_of_turn(-1)
    assert f"Turn #{turn.run_entry_id}" in shown and "Messages the turn sent" in shown
    assert "You are Bub" in shown and "And now?" in shown and "Hello there" not in shown
    nb.run("%context --turn -2")
    assert "Hello there" in plain(nb.displays.outputs[-1])
    # The strip marks the turn's own system entry as sent, with the entries after it.
    shown_view = ContextView(nb.tape, TurnOf(-1))
    sent = {cell.id for cell in shown_view.strip.cells if cell.in_view}
    assert sent == {turn.sources[0], *turn.entry_ids}


def test_context_diff_takes_modes_and_turns(nb: Notebook) -> None:
    nb.run("%%bub\nHello there")
    nb.run("%handoff phase/next summary=greeted")
    nb.run("%%bub\nAnd now?")
    nb.run("%context --diff full last")
    expected = diff_views(nb.tape.view(None), nb.tape.view())
    assert expected.summary in plain(nb.displays.outputs[-1])
    nb.run("%context --diff turn:-2 turn:-1")
    turns = diff_views(nb.tape.view_of_turn(-2), nb.tape.view_of_turn(-1))
    assert turns.summary in plain(nb.displays.outputs[-1]) and turns.entered


BAD_CONTEXT_LINES = [
    ("%context --turn -5", "no turn -5"),
    ("%context --turn 0", "-1 is the last turn"),
    ("%context --turn", "expected one argument"),
    ("%context last --turn -1", "one of a mode, --turn N or --diff A B"),
    ("%context --turn -1 --diff last full", "one of a mode, --turn N or --diff A B"),
    ("%context --diff last", "expected 2 arguments"),
    ("%context --diff last no-such-anchor", "no-such-anchor"),
    ("%context --diff turn:x last", "No turn with run id 'x'"),
]


@pytest.mark.parametrize(("line", "match"), BAD_CONTEXT_LINES)
def test_bad_turn_and_diff_arguments_are_one_usage_error(nb: Notebook, line: str, match: str) -> None:
    nb.run("%%bub\nHello there")
    before = len(nb.tape)
    with pytest.raises(UsageError, match=match) as caught:
        nb.run(line)
    assert "\n" not in str(caught.value).strip()
    assert len(nb.tape) == before


@pytest.mark.parametrize("entries", [38, 215])
def test_long_strips_break_together_so_every_entry_of_a_sits_above_its_entry_of_b(tape: Tape, entries: int) -> None:
    tape.ensure_bootstrap_anchor()
    for number in range(entries - 3):
        tape.append_message({"role": "user" if number % 2 else "assistant", "content": f"message {number}"})
    tape.handoff("phase/late", {"summary": "late"})
    page = ContextDiffView(tape, "full", "last").to_html()
    rows = re.findall(
        r'<span class="bub-diff-label" data-side="(a|b)"[^>]*>([^<]*)</span>'
        r'<div class="bub-diff-side" data-side="\1" data-chunk="(\d+)"><div class="bub-strip">(.*?)</div></div>',
        page,
        re.DOTALL,
    )
    ids = re.compile(r'data-entry-id="(\d+)"')
    assert [side for side, *_ in rows] == ["a", "b"] * (len(rows) // 2) and len(rows) >= 2
    pairs = list(zip(rows[::2], rows[1::2], strict=True))
    for (_, _, chunk_a, cells_a), (_, _, chunk_b, cells_b) in pairs:
        assert chunk_a == chunk_b and ids.findall(cells_a) == ids.findall(cells_b)  # each row pair: the same entries
        assert len(ids.findall(cells_a)) <= CHUNK
    assert [i for (_, _, _, cells), _ in pairs for i in ids.findall(cells)] == [str(e.id) for e in tape.read()]
    assert 'class="bub-diff-strips"' in page  # one grid: the labels have a column of their own
