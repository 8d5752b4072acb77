"""A tape names the notebook that wrote it: one ``notebook`` event, after the first cell that wrote."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell

from bub_nb.tape import open_tape, session_tape_name


@pytest.fixture
def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    monkeypatch.setenv("BUB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("BUB_MODEL", "offline")
    monkeypatch.setenv("JPY_SESSION_NAME", str(tmp_path / "lesson.ipynb"))
    monkeypatch.chdir(tmp_path)
    InteractiveShell.clear_instance()
    shell = InteractiveShell.instance()
    shell.run_cell("%load_ext bub_nb")
    yield shell
    shell.run_cell("%unload_ext bub_nb")
    InteractiveShell.clear_instance()


def notebook_events(tmp_path: Path) -> list[dict[str, object]]:
    tape = open_tape(session_tape_name(tmp_path, "lesson.ipynb"), home=tmp_path / "home")
    return [e.payload["data"] for e in tape.read() if e.kind == "event" and e.name == "notebook"]


def test_the_first_cell_that_writes_records_the_notebook_once(shell: InteractiveShell, tmp_path: Path) -> None:
    shell.run_cell("x = 1")
    assert not (tmp_path / "home").exists()  # a cell that writes nothing makes nothing, not even the folder
    assert shell.run_cell("%handoff").error_in_exec is not None  # refused: nothing written, nothing recorded
    assert not (tmp_path / "home").exists()
    shell.run_cell("%%bub\nHello")
    shell.run_cell("%handoff lesson/1 summary=done")
    path = str(tmp_path / "lesson.ipynb")
    assert notebook_events(tmp_path) == [{"path": path, "source": "JPY_SESSION_NAME"}]
    tape = open_tape(session_tape_name(tmp_path, "lesson.ipynb"), home=tmp_path / "home")
    turn_end = next(e.id for e in tape.read() if e.name == "run")
    assert [e.id for e in tape.read() if e.name == "notebook"] == [turn_end + 1]  # after the cell's own entries

    shell.run_cell("%unload_ext bub_nb")  # a restarted kernel finds the event and writes no second one
    shell.run_cell("%load_ext bub_nb")
    shell.run_cell("%%bub\nAgain")
    assert len(notebook_events(tmp_path)) == 1


def test_a_tape_that_starts_over_names_the_notebook_again(shell: InteractiveShell, tmp_path: Path) -> None:
    path = {"path": str(tmp_path / "lesson.ipynb"), "source": "JPY_SESSION_NAME"}
    shell.run_cell("%%bub\nHello")
    assert notebook_events(tmp_path) == [path]
    assert shell.run_cell("%tape reset").error_in_exec is None
    assert notebook_events(tmp_path) == [path]  # the cell that reset wrote session/start: named again at once
    shell.run_cell("%%bub\nAgain")
    shell.run_cell(",tape.reset archive=true")
    shell.run_cell("x = 1")
    assert notebook_events(tmp_path) == [path]
