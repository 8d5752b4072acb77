"""Tape names as Bub computes them, the current notebook's tape, and what open_tape accepts."""

from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path

import pytest

from bub_nb.errors import TapeError, TapeNameError
from bub_nb.tape import current_notebook, open_tape, session_tape_name, validate_tape_name


def bub_session_tape(workspace: Path, session_id: str) -> str:
    """Bub's ``TapeService.session_tape``: md5 of the workspace path and of the session id, 16 hex digits each."""
    workspace_hash = hashlib.md5(str(workspace.resolve()).encode()).hexdigest()[:16]
    session_hash = hashlib.md5(session_id.encode()).hexdigest()[:16]
    return f"{workspace_hash}__{session_hash}"


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("BUB_HOME", str(tmp_path / "bub"))
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.delattr(sys.modules["__main__"], "__vsc_ipynb_file__", raising=False)
    return tmp_path / "bub"


def test_session_tape_name_is_bubs_formula(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name = session_tape_name(tmp_path, "analysis.ipynb")
    assert name == bub_session_tape(tmp_path, "analysis.ipynb")
    workspace, session = name.split("__")
    assert re.fullmatch(r"[0-9a-f]{16}", workspace) and re.fullmatch(r"[0-9a-f]{16}", session)
    monkeypatch.chdir(tmp_path.parent)
    assert session_tape_name(Path(tmp_path.name), "analysis.ipynb") == name  # resolved, so relative paths agree
    assert session_tape_name(tmp_path / "other", "analysis.ipynb").split("__")[0] != workspace
    assert session_tape_name(str(tmp_path), "other.ipynb").split("__")[1] != session


def test_no_argument_opens_the_notebook_named_by_jupyter(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    notebook = tmp_path / "work" / "lesson.ipynb"
    notebook.parent.mkdir()
    notebook.touch()
    monkeypatch.setenv("JPY_SESSION_NAME", str(notebook))
    monkeypatch.setattr(sys.modules["__main__"], "__vsc_ipynb_file__", str(tmp_path / "vscode.ipynb"), raising=False)
    tape = open_tape()
    assert tape.name == bub_session_tape(notebook.parent, "lesson.ipynb")
    assert tape.path == home / "tapes" / f"{tape.name}.jsonl"
    assert current_notebook().source == "JPY_SESSION_NAME"


def test_no_argument_falls_back_to_vscode_then_the_working_directory(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys.modules["__main__"], "__vsc_ipynb_file__", str(tmp_path / "code.ipynb"), raising=False)
    assert open_tape().name == bub_session_tape(tmp_path, "code.ipynb")
    monkeypatch.delattr(sys.modules["__main__"], "__vsc_ipynb_file__")
    monkeypatch.chdir(tmp_path)
    assert open_tape().name == bub_session_tape(tmp_path, "default")
    assert current_notebook().source == "cwd"


def test_paths_open_that_file(home: Path, tmp_path: Path) -> None:
    by_path = open_tape(tmp_path / "data" / "shared.jsonl")
    by_path.append_message({"role": "user", "content": "x"})
    assert (tmp_path / "data" / "shared.jsonl").exists() and by_path.name == "shared"
    by_string = open_tape(str(tmp_path / "data" / "shared.jsonl"))
    assert by_string.read() == by_path.read()
    assert open_tape("relative/dir/t.jsonl").path == Path("relative/dir/t.jsonl").resolve()
    with pytest.raises(TapeNameError, match=r"notes\.txt"):
        open_tape(tmp_path / "notes.txt")
    with pytest.raises(TapeNameError, match=r"''"):
        open_tape(tmp_path / ".jsonl")


def test_names_open_under_the_tapes_home(home: Path, tmp_path: Path) -> None:
    assert open_tape("plain-name_1").path == home / "tapes" / "plain-name_1.jsonl"
    assert open_tape("x", home=tmp_path / "other").path == tmp_path / "other" / "tapes" / "x.jsonl"


@pytest.mark.parametrize("name", ["a/b", "..", "up..", "a\\b", "", "   ", ".hidden", "nul\x00", "n" * 201])
def test_a_name_that_is_not_plain_is_refused_quoting_it(home: Path, name: str) -> None:
    with pytest.raises(TapeNameError) as caught:
        open_tape(name)
    assert repr(name) in str(caught.value)
    with pytest.raises(TapeNameError):
        validate_tape_name(name)


def test_a_tape_under_a_file_is_refused_naming_the_folder(home: Path, tmp_path: Path) -> None:
    (tmp_path / "plain-file").write_text("not a folder")
    with pytest.raises(TapeError, match="plain-file"):
        open_tape(tmp_path / "plain-file" / "t.jsonl")
    with pytest.raises(TapeError, match="plain-file"):
        open_tape("t", home=tmp_path / "plain-file")
