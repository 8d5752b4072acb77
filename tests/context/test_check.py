"""Exercises with checks: a class's "fact 3 is in the view, fact 1 is not", with a hint when it fails."""

from __future__ import annotations

from pathlib import Path

import pytest

import bub_nb
from bub_nb import CheckFailed, check, open_tape


def lesson(home: Path) -> bub_nb.Tape:
    tape = open_tape("facts", home=home)
    tape.ensure_bootstrap_anchor()
    for number in (1, 2):
        tape.append_message({"role": "user", "content": f"Fact {number}: something to keep"})
    tape.handoff("lesson/decision", {"summary": "Fact 3 decides: we take the train"})
    tape.append_message({"role": "user", "content": "Fact 4: the train leaves at nine"})
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
