"""Headless runs (nbconvert, papermill, an nbclient script) give each notebook its own tape, and the
tape records which notebook wrote it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest

from bub_nb.cli import main
from bub_nb.tape import open_tape, read_tapes, session_tape_name

BIN = Path(sys.executable).parent


def lesson(folder: Path, name: str) -> Path:
    cells = ["%load_ext bub_nb", f"%%bub\nHello from {name}", f"%handoff lesson/{name} summary='done'"]
    path = folder / name
    kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    notebook.metadata["kernelspec"] = kernelspec
    nbformat.write(notebook, path)
    return path


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    folder = tmp_path / "class"
    folder.mkdir()
    lesson(folder, "a.ipynb")
    lesson(folder, "b.ipynb")
    return folder


def environment(tmp_path: Path) -> dict[str, str]:
    env = {**os.environ, "BUB_HOME": str(tmp_path / "home"), "BUB_MODEL": "offline"}
    env.pop("JPY_SESSION_NAME", None)
    return env


def run(command: list[str], cwd: Path, env: dict[str, str]) -> None:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]


def assert_own_tapes(home: Path, folder: Path) -> None:
    for name in ("a.ipynb", "b.ipynb"):
        tape = open_tape(session_tape_name(folder, name), home=home)
        assert [n for n in tape.anchor_names() if not n.startswith("memory/")] == ["session/start", f"lesson/{name}"]
        assert [e.payload["data"]["path"] for e in tape.read() if e.name == "notebook"] == [str(folder / name)]
    frame = read_tapes(home)
    assert set(zip(frame["tape_name"], frame["notebook"], strict=True)) == {
        (session_tape_name(folder, n), str(folder / n)) for n in ("a.ipynb", "b.ipynb")
    }


def test_nbconvert_runs_give_each_notebook_its_own_tape_and_bub_nb_tapes_names_it(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = environment(tmp_path)
    for name in ("a.ipynb", "b.ipynb"):
        command = [str(BIN / "jupyter-nbconvert"), "--to", "notebook", "--execute", name, "--output", f"out-{name}"]
        run(command, folder, env)
    assert_own_tapes(tmp_path / "home", folder)
    assert main(["tapes", "list", str(tmp_path / "home")]) == 0
    lines = sorted(capsys.readouterr().out.strip().splitlines())
    expected = sorted((session_tape_name(folder, n), f"notebook: {folder / n}") for n in ("a.ipynb", "b.ipynb"))
    assert [(line.split()[0], line[line.index("notebook: ") :]) for line in lines] == expected
    assert main(["tapes", "list", str(tmp_path / "nowhere")]) == 2


def test_papermill_runs_give_each_notebook_its_own_tape(folder: Path, tmp_path: Path) -> None:
    env = environment(tmp_path)
    for name in ("a.ipynb", "b.ipynb"):
        run([str(BIN / "papermill"), "--no-progress-bar", name, str(tmp_path / f"out-{name}")], folder, env)
    assert_own_tapes(tmp_path / "home", folder)


def test_an_nbclient_script_naming_its_notebook_gives_it_its_own_tape(folder: Path, tmp_path: Path) -> None:
    script = tmp_path / "execute.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys, nbformat
            from nbclient import NotebookClient
            path = sys.argv[1]
            notebook = nbformat.read(path, as_version=4)
            NotebookClient(notebook, resources={"metadata": {"path": "."}}).execute()
            """
        )
    )
    env = environment(tmp_path)
    for name in ("a.ipynb", "b.ipynb"):
        run([sys.executable, str(script), name], folder, env)
    assert_own_tapes(tmp_path / "home", folder)


def test_papermills_input_path_parameter_names_the_notebook(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import papermill

    for key, value in environment(tmp_path).items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    for name in ("a.ipynb", "b.ipynb"):  # this process names no notebook: only the parameter does
        source = folder / name
        papermill.execute_notebook(
            str(source),
            str(tmp_path / f"out-{name}"),
            parameters={"PAPERMILL_INPUT_PATH": str(source)},
            cwd=str(folder),
            progress_bar=False,
        )
    assert_own_tapes(tmp_path / "home", folder)
