"""Exercises with checks: a class's "fact 3 is in the view, fact 1 is not", with a hint when it fails."""

from __future__ import annotations

from pathlib import Path

import pytest

import bub_nb
from bub_nb import CheckFailed, check, open_tape
from bub_nb.context import CheckRefused, NotDone

#: What a turn or a magic writes on every entry (``%%bub`` a run id, ``%handoff`` its source).
TURN = {"run_id": "r1", "source": "notebook"}


def lesson(home: Path) -> bub_nb.Tape:
    tape = open_tape("facts", home=home)
    tape.ensure_bootstrap_anchor()
    for number in (1, 2):
        tape.append_message({"role": "user", "content": f"Fact {number}: something to keep"}, **TURN)
    tape.handoff("lesson/decision", {"summary": "Fact 3 decides: we take the train"}, source="notebook")
    tape.append_message({"role": "user", "content": "Fact 4: the train leaves at nine"}, **TURN)
    return tape


def test_a_check_passes_when_the_view_holds_and_lacks_what_it_should(tmp_path: Path) -> None:
    tape = lesson(tmp_path)
    passed = check(tape, contains=["fact 3", "Fact 4"], excludes="Fact 1")
    assert str(passed) == "Check passed: the view holds 'fact 3', 'Fact 4' and does not hold 'Fact 1'."
    assert check(tape.view(None), contains="Fact 1")  # a View as well as a tape


def test_a_failed_check_names_what_is_missing_and_what_is_still_there_with_a_hint(tmp_path: Path) -> None:
    tape = lesson(tmp_path)
    with pytest.raises(CheckFailed) as failed:
        check(tape, contains="Fact 1", excludes="Fact 4")
    message = str(failed.value)
    assert message.startswith("Not yet: the view should hold 'Fact 1' and does not; the view should not hold 'Fact 4'")
    assert "Hint: The view [last-anchor] starts at anchor 'lesson/decision'" in message and "%context" in message
    with pytest.raises(AssertionError, match="Hint: look before the handoff"):
        check(tape, contains="Fact 2", hint="look before the handoff")
    with pytest.raises(CheckFailed, match="needs contains= or excludes="):
        check(tape)


def attempts(tape: bub_nb.Tape) -> list[dict[str, object]]:
    return [e.payload["data"] for e in tape.read(kinds=("event",)) if e.payload.get("name") == "exercise.check"]


def test_a_check_that_could_not_fail_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    tape = lesson(tmp_path)
    before = len(tape)
    with pytest.raises(CheckRefused, match="contains=''"):
        check(tape, contains="", exercise="1")
    with pytest.raises(CheckRefused, match="excludes='zzz' is on no entry"):
        check(tape, excludes="zzz", exercise="1")
    assert len(tape) == before


def test_a_hand_appended_message_does_not_count_and_the_check_says_so(tmp_path: Path) -> None:
    tape = lesson(tmp_path)
    tape.append_message({"role": "user", "content": "Fact 1: pasted by hand"})  # no turn or magic wrote it
    with pytest.raises(CheckFailed, match="appended by hand, not written by a turn or a magic: it does not count"):
        check(tape.view("window:1"), contains="Fact 1")  # a View knows which of its entries were
    with pytest.raises(CheckFailed, match=r"entry #\d+ holds 'Fact 1' but was appended by hand"):
        check(tape, contains="Fact 1")


def test_a_check_of_where_the_view_starts_needs_that_anchor_written_by_a_magic(tmp_path: Path) -> None:
    tape = open_tape("skipped", home=tmp_path)
    tape.ensure_bootstrap_anchor()
    tape.append_message({"role": "user", "content": "Fact 1: the trip"}, **TURN)
    # The handoff cell was skipped: the whole tape is in view, so "Fact 1" is there; the check is about the anchor.
    with pytest.raises(
        CheckFailed, match="should start at anchor 'trip/decided', and starts at anchor 'session/start'"
    ):
        check(tape, starts_at="trip/decided", contains="Fact 1")
    tape.append(bub_nb.TapeEntry.anchor("trip/decided", {"summary": "by hand"}))
    with pytest.raises(CheckFailed, match=r"'trip/decided' .* was appended by hand, not by %handoff"):
        check(tape, starts_at="trip/decided")
    tape.handoff("trip/decided", {"summary": "we chose the train"}, source="notebook")
    assert "starts at 'trip/decided'" in str(check(tape, starts_at="trip/decided", contains="chose the train"))


def test_an_exercise_not_done_says_so_without_raising_and_every_attempt_is_recorded(tmp_path: Path) -> None:
    tape = lesson(tmp_path)
    done = check(tape, contains=[], excludes=[], exercise="view after the handoff", hint="Use %context.")
    assert isinstance(done, NotDone) and not done and "Not done yet" in str(done) and "Use %context." in str(done)
    with pytest.raises(CheckFailed):
        check(tape, contains="Fact 1", exercise="view after the handoff")
    assert check(tape, contains="Fact 4", excludes="Fact 1", exercise="view after the handoff")
    assert [(a["passed"], a["done"]) for a in attempts(tape)] == [(False, False), (False, True), (True, True)]
    assert "the view should hold 'Fact 1'" in str(attempts(tape)[1]["problems"])
    check(tape, contains="Fact 4")  # an unnamed check records nothing
    assert len(attempts(tape)) == 3
