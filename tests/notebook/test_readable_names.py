"""Readable tape names: a notebook's hashed tape is named by its notebook's file in confirmations and widgets."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness.shell import Notebook

from bub_nb.notebook.widgets import ContextView, MemoryView, TapeTimeline
from bub_nb.tape import Tape
from bub_nb.tape.events import NOTEBOOK
from bub_nb.tape.locations import readable_tape_name
from bub_nb.tape.names import session_tape_name
from bub_nb.tape.stores.file import FileTapeStore


def test_confirmations_name_the_notebook_and_the_short_hash(
    nb: Notebook, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    notebook = tmp_path / "trip-lesson.ipynb"
    notebook.write_text("{}")
    monkeypatch.setenv("JPY_SESSION_NAME", str(notebook))
    nb.magics.session.forget_tape()
    name = nb.tape.name
    assert name == session_tape_name(tmp_path, "trip-lesson.ipynb")
    readable = f"trip-lesson.ipynb ({name[:8]})"
    nb.run("%%bub\nHello")
    nb.run("%handoff phase/plan summary='Planned the trip'")
    nb.run("%tape reset --archive")
    shown = nb.shown()
    assert f"on tape `{readable}`" in shown and f"Tape `{readable}` starts over" in shown
    assert name not in shown.replace(f"{name}.jsonl", ""), "the hashed name is shown where the notebook's would do"
    for widget in (ContextView(nb.tape), TapeTimeline(nb.tape), MemoryView(nb.tape)):
        assert readable in widget.to_text() and readable in widget.to_html()


def test_a_tape_another_notebook_wrote_is_named_by_its_notebook_event(tmp_path: Path) -> None:
    name = session_tape_name(tmp_path, "budget.ipynb")
    tape = Tape(name, FileTapeStore(tmp_path / "tapes"))
    tape.append_event(NOTEBOOK, {"path": str(tmp_path / "budget.ipynb"), "source": "JPY_SESSION_NAME"})
    for number in range(300):  # far from the end: the event is found where a notebook writes it, at the start
        tape.append_message({"role": "user", "content": f"message {number}"})
    assert readable_tape_name(tape) == f"budget.ipynb ({name[:8]})"


def test_other_names_are_shown_as_they_are(tmp_path: Path) -> None:
    assert readable_tape_name(Tape("lesson-context", FileTapeStore(tmp_path))) == "lesson-context"
    hashed = Tape(session_tape_name(tmp_path, "gone.ipynb"), FileTapeStore(tmp_path))
    assert readable_tape_name(hashed) == hashed.name  # nothing says which notebook: the name itself
