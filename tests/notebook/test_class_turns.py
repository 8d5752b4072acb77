"""A teacher's view of a student: from the class overview, a student's last turn as ``%context --turn -1`` shows it."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness.widgets import find

from bub_nb.agent import Agent
from bub_nb.context import TurnOf, student_turn, view_of_turn
from bub_nb.errors import ContextError, TapeNotFoundError
from bub_nb.notebook.widgets import ClassOverview, ContextView
from bub_nb.tape import FileTapeStore, open_tape


@pytest.fixture
def class_home(tmp_path: Path) -> FileTapeStore:
    """A class on files: three students' tapes in one shared folder, each with real turns of the offline model."""
    store = FileTapeStore(tmp_path / "tapes")
    for number, student in enumerate(("ann", "ben", "cleo"), start=1):
        tape = open_tape(f"{student}-lesson", store=store)
        Agent(tape, "offline").run(f"{student}: what is a tape?")
        tape.handoff("phase/two", {"summary": f"{student} learned what a tape is"})
        for turn in range(number):
            Agent(tape, "offline").run(f"{student}: question {turn + 2}")
    open_tape("dan-lesson", store=store).ensure_bootstrap_anchor()  # a student who has not asked anything yet
    return store


def test_a_students_last_turn_is_the_request_context_turn_shows(class_home: FileTapeStore) -> None:
    tape = open_tape("ben-lesson", store=class_home)
    turn = student_turn("ben-lesson", class_home)
    assert turn == view_of_turn(tape, -1)  # what %context --turn -1 rebuilds on ben's own notebook
    assert turn.messages[0]["role"] == "system" and turn.messages[-1]["content"] == "ben: question 3"
    assert "ben learned what a tape is" in str(turn.messages[1]["content"])  # the view starts at ben's handoff
    assert student_turn("ben-lesson", class_home, run=-2).messages[-1]["content"] == "ben: question 2"

    shown = ClassOverview(class_home).turn("ben-lesson")
    assert isinstance(shown, ContextView) and shown.view == turn
    assert shown.to_text() == ContextView(tape, TurnOf(-1)).to_text()


def test_a_tape_the_class_does_not_hold_or_without_turns_says_why(class_home: FileTapeStore) -> None:
    with pytest.raises(TapeNotFoundError, match="ben-lesson"):  # the names it may have meant
        student_turn("ben-leson", class_home)
    with pytest.raises(ContextError, match="no turn -1"):
        student_turn("dan-lesson", class_home)
    assert not (class_home.directory / "ben-leson.jsonl").exists()  # looking wrote nothing


def test_the_overview_widget_opens_the_picked_students_last_turn(class_home: FileTapeStore) -> None:
    overview = ClassOverview(class_home)
    box = overview.widget
    picker, opener, shown = (find(box, part) for part in ("bub-student-picker", "bub-open-turn", "bub-student-turn"))
    assert [value for _label, value in picker.options] == ["ann-lesson", "ben-lesson", "cleo-lesson", "dan-lesson"]
    picker.value = "cleo-lesson"
    opener.click()
    (view,) = shown.children
    markup = find(view, "bub-context-messages").value
    assert "cleo: question 4" in markup and "cleo: question 3" not in markup.split("cleo: question 4")[1]
    assert "Turn" in find(view, "bub-context-header").value
    picker.value = "dan-lesson"
    opener.click()
    (error,) = shown.children
    assert "bub-error" in error.value and "no turn -1" in error.value  # one line, no traceback
    open_tape("eve-lesson", store=class_home).ensure_bootstrap_anchor()
    overview.refresh()
    assert "eve-lesson" in [value for _label, value in picker.options]
