"""Reading a saved notebook's identity: the tape its outputs name, and the choice ``%tape continue`` keeps."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import nbformat

from bub_nb.notebook.identity import KEEP_OWN, claimed_tape, keep_choice, kept_choice


def saved(path: Path, *tapes: object) -> Path:
    cells = []
    for tape in tapes:
        cell = nbformat.v4.new_code_cell("%%bub\nhello")
        cell.outputs = [
            nbformat.v4.new_output("display_data", {"text/plain": "hi"}, metadata={"bub_nb": {"tape": tape}})
        ]
        cells.append(cell)
    nbformat.write(nbformat.v4.new_notebook(cells=cells), path)
    return path


def test_the_last_answer_names_the_notebooks_tape_and_an_agents_tape_names_its_notebooks(tmp_path: Path) -> None:
    assert claimed_tape(saved(tmp_path / "a.ipynb", "first", "second~reviewer")) == "second"


def test_a_name_no_tape_can_have_is_ignored(tmp_path: Path) -> None:
    assert claimed_tape(saved(tmp_path / "a.ipynb", "kept", "../../etc/passwd", 7, "")) == "kept"


def test_a_missing_or_broken_notebook_names_no_tape(tmp_path: Path) -> None:
    assert claimed_tape(tmp_path / "gone.ipynb") is None
    (tmp_path / "broken.ipynb").write_text("{not json")
    assert claimed_tape(tmp_path / "broken.ipynb") is None
    (tmp_path / "odd.ipynb").write_text(json.dumps({"cells": [{"outputs": [{"metadata": ["no"]}]}, 3]}))
    assert claimed_tape(tmp_path / "odd.ipynb") is None


def test_a_kept_choice_is_a_private_file_under_the_home_read_back(tmp_path: Path) -> None:
    own = "a" * 16 + "__" + "b" * 16
    assert kept_choice(tmp_path, own) is None
    path = keep_choice(tmp_path, own, "older", "/work/x.ipynb")
    assert path == tmp_path / "notebooks" / f"{own}.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert kept_choice(tmp_path, own) == "older"
    keep_choice(tmp_path, own, KEEP_OWN, "/work/x.ipynb")
    assert kept_choice(tmp_path, own) == KEEP_OWN
    path.write_text(json.dumps({"tape": "../x"}))
    assert kept_choice(tmp_path, own) is None
