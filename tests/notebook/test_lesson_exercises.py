"""The lesson's exercises on a real IPython shell: shipped empty they say "not done yet" and Run All goes on;
filled in right they pass; the shortcuts a student might take fail; every attempt reaches the teacher."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell

import bub_nb.agent.registry as registry
from bub_nb.context import CheckFailed, CheckPassed, NotDone
from bub_nb.notebook.widgets import ClassOverview

LESSON = Path(__file__).resolve().parents[2] / "examples" / "lesson-context.ipynb"
EXERCISES = {"1: the view after the handoff", "2: after the overflow", "3: the fork"}
#: What a student who did the exercises writes in them, by the line each exercise's cell starts its call with.
ANSWERS = {
    "# Exercise 1": ("contains=[],", 'contains=["we chose the train"],', "excludes=[],", 'excludes=["Fact 1:"],'),
    "# Exercise 2": ("contains=[], excludes=[]", 'contains=["Fact 6"], excludes=["Fact 1:"]'),
    "fork = ": ("contains=[]", 'contains=["Try the plane instead of the train"]'),
}


def cells() -> list[str]:
    notebook = json.loads(LESSON.read_text(encoding="utf-8"))
    return ["".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "code"]


def answered(source: str) -> str:
    for start, replacements in ANSWERS.items():
        if source.startswith(start):
            for old, new in zip(replacements[::2], replacements[1::2], strict=True):
                assert old in source, f"the exercise cell changed: {source}"
                source = source.replace(old, new)
    return source


@pytest.fixture
def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    monkeypatch.setenv("BUB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("BUB_MODEL", "offline")
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(registry, "_pipeline", None)
    InteractiveShell.clear_instance()
    running = InteractiveShell.instance()
    yield running
    if "bub_nb" in running.extension_manager.loaded:
        running.run_cell("%unload_ext bub_nb")
    InteractiveShell.clear_instance()


def run(shell: InteractiveShell, sources: list[str]) -> list[object]:
    """Each cell's result, or the exception it raised (as Run All would show it, going on when nothing raised)."""
    results = []
    for source in sources:
        outcome = shell.run_cell(source)
        results.append(outcome.error_in_exec or outcome.error_before_exec or outcome.result)
    return results


def checks(results: list[object]) -> list[object]:
    return [r for r in results if isinstance(r, CheckPassed | NotDone | CheckFailed)]


def test_shipped_empty_the_exercises_say_not_done_yet_and_run_all_goes_on(shell: InteractiveShell) -> None:
    results = run(shell, cells())
    assert not [r for r in results if isinstance(r, BaseException)]
    found = checks(results)
    assert [type(r) for r in found] == [NotDone, NotDone, NotDone] and not any(found)
    assert {r.exercise for r in found if isinstance(r, NotDone)} == EXERCISES


def test_filled_in_right_they_pass_and_the_teacher_sees_who_passed_what(
    shell: InteractiveShell, tmp_path: Path
) -> None:
    results = run(shell, [answered(source) for source in cells()])
    found = checks(results)
    assert [type(r) for r in found] == [CheckPassed] * 3, found
    overview = ClassOverview()
    passed = dict(zip(overview.frame["tape_name"], overview.frame["exercises"], strict=True))
    assert passed["lesson-context"] == "passed 1, 2 (of 2 tried)"
    assert passed["lesson-context-plane"] == "passed 3 (of 1 tried)"
    assert "exercises" in overview.to_text() and "passed 1, 2" in overview.to_html()


def test_the_shortcuts_fail_a_skipped_handoff_and_a_pasted_answer(shell: InteractiveShell) -> None:
    sources = [answered(source) for source in cells()]
    handoff = next(i for i, source in enumerate(sources) if source.startswith("%handoff trip/decided"))
    exercise = next(i for i, source in enumerate(sources) if source.startswith("# Exercise 1"))
    results = run(shell, [*sources[:handoff], sources[handoff + 1 : exercise][0], sources[exercise]])
    assert isinstance(results[-1], CheckFailed) and "should start at anchor 'trip/decided'" in str(results[-1])
    shell.run_cell("%handoff trip/decided")
    shell.run_cell("tape.append_message({'role': 'user', 'content': 'we chose the train'})")
    [failed] = run(shell, [sources[exercise]])
    assert isinstance(failed, CheckFailed) and "appended by hand" in str(failed)
