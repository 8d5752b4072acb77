"""One mode parser: the Python API takes the mode words the magics take."""

from __future__ import annotations

from pathlib import Path

import pytest

import bub_nb  # noqa: F401  (registers Tape.view)
from bub_nb import Tape, open_tape
from bub_nb.context import parse_mode
from bub_nb.errors import ContextError
from bub_nb.notebook.widgets import ContextView


@pytest.fixture
def tape(tmp_path: Path) -> Tape:
    tape = open_tape("modes", home=tmp_path)
    tape.ensure_bootstrap_anchor()
    tape.append_message({"role": "user", "content": "one"})
    tape.handoff("full", {"summary": "an anchor whose name is a mode word"})
    for text in ("two", "three", "four", "five", "six"):
        tape.append_message({"role": "user", "content": text})
    return tape


@pytest.mark.parametrize("word", ["full", "all", "window:3", "last", "last-anchor", "notebook:2", "anchor:full"])
def test_tape_view_takes_the_words_the_magics_take(tape: Tape, word: str) -> None:
    assert tape.view(word).entry_ids == tape.view(parse_mode(word)).entry_ids
    assert tape.view(word).mode == parse_mode(word).label


def test_full_window_and_anchor_prefix_mean_what_they_say(tape: Tape) -> None:
    assert len(tape.view("full").messages) == len(tape.view(None).messages) == 8
    assert [m["content"] for m in tape.view("window:3").messages] == ["four", "five", "six"]
    named = tape.view("anchor:full")
    assert named.anchor is not None and named.anchor.name == "full" and len(named.messages) == 6


def test_the_context_widget_takes_mode_words(tape: Tape) -> None:
    context = ContextView(tape)
    assert [m["content"] for m in context.set_mode("window:5").messages] == ["two", "three", "four", "five", "six"]
    assert context.set_mode("anchor:full").anchor.name == "full"  # type: ignore[union-attr]
    with pytest.raises(ContextError, match="window:0"):
        context.set_mode("window:0")
    assert context.view.mode == "anchor:full"


@pytest.mark.parametrize("spelled", ["last", "full", "phases", "window:3", "notebook", "notebook:4", "anchor:phase/a"])
def test_a_modes_label_reads_back_as_the_same_mode(spelled: str) -> None:
    # A run event records the label; replay and the turn views read it back as a mode.
    strategy = parse_mode(spelled)
    assert parse_mode(strategy.label) == strategy
