"""Run All a second time in a real kernel: a ``%%bub`` turn whose view holds an earlier run of its own cell says so
once, in one line naming ``%lesson start`` and ``%%bub --fresh``; ``--fresh`` starts the run after a new anchor,
rewriting nothing."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from bub_nb.tape import open_tape, session_tape_name

pytest.importorskip("ipykernel")

NOTE = "This cell ran before"


def run_all(path: Path, home: Path) -> list[str]:
    """Run every cell of ``path`` in a fresh kernel, as Run All does; the text each code cell showed."""
    notebook = nbformat.read(path, as_version=4)
    env = {key: value for key, value in os.environ.items() if not key.startswith(("BUB_", "OPENAI_"))}
    env.update({"BUB_HOME": str(home), "BUB_MODEL": "offline", "JPY_SESSION_NAME": str(path)})
    NotebookClient(notebook, timeout=120, kernel_name="python3").execute(env=env, cwd=str(path.parent))
    shown = []
    for cell in notebook.cells:
        parts = [o.get("text", "") or o.get("data", {}).get("text/plain", "") for o in cell.get("outputs", [])]
        shown.append("\n".join(parts))
    return shown


def test_a_second_run_all_names_the_earlier_run_once_and_fresh_starts_clean(tmp_path: Path) -> None:
    path = tmp_path / "study.ipynb"
    cells = ["%load_ext bub_nb", "%%bub\nWhat do the numbers say?", "%%bub\nWhat do the numbers say?"]
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells]), path)
    home = tmp_path / "home"

    first = run_all(path, home)
    assert NOTE not in first[1]  # the first run has nothing earlier in its view
    assert NOTE not in first[2]  # two cells of one run asking the same thing are not a run again

    second = run_all(path, home)
    note = next(line for line in second[1].splitlines() if NOTE in line)
    assert "`%lesson start NAME`" in note and "`%%bub --fresh`" in note
    assert NOTE not in second[2]  # said once for that prompt, not on every turn after

    tape = open_tape(session_tape_name(tmp_path, "study.ipynb"), home=home)
    before = [entry.to_dict() for entry in tape.read()]
    cells[1] = "%%bub --fresh\nWhat do the numbers say?"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells[:2]]), path)
    third = run_all(path, home)
    assert NOTE not in third[1]
    after = tape.read()
    assert [entry.to_dict() for entry in after[: len(before)]] == before  # nothing rewritten
    fresh = [entry for entry in after[len(before) :] if entry.kind == "anchor"]
    assert [entry.name for entry in fresh] == ["run/fresh"]
    assert "view from anchor run/fresh" in third[1]
