"""Every batch runner names the notebook a kernel runs, however many notebooks one command runs and whatever
outputs exist already: no request to the model ever holds two notebooks' prompts, and a kernel that cannot
tell its notebook says so and keeps a tape of its own, never the folder's shared one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest

from bub_nb.tape import open_tape, session_tape_name
from bub_nb.testing import OpenAICompatibleServer

BIN = Path(sys.executable).parent
NAMES = ("analysis.ipynb", "report.ipynb")


def notebook(folder: Path, name: str, asks: tuple[str, ...]) -> Path:
    cells = ["%load_ext bub_nb", *(f"%%bub\n{ask}" for ask in asks)]
    document = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    document.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(document, folder / name)
    return folder / name


def asks_of(name: str) -> tuple[str, ...]:
    return (f"First question of {name}", f"Second question of {name}")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    for name in NAMES:
        notebook(folder, name, asks_of(name))
    return folder


def environment(tmp_path: Path, server: OpenAICompatibleServer) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in ("JPY_SESSION_NAME", "BUB_STORE")}
    return {
        **env,
        "BUB_HOME": str(tmp_path / "home"),
        "BUB_MODEL": "openai:test-model",
        "BUB_API_BASE": server.base_url,
        "BUB_API_KEY": "test-key-not-secret",
    }


def run(command: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def notebooks_in(request: dict[str, object]) -> set[str]:
    """The notebooks whose prompts one request to the model holds."""
    text = json.dumps(request["messages"])
    return {name for name in NAMES for ask in asks_of(name) if ask in text}


def assert_each_notebook_on_its_own_tape(home: Path, folder: Path, server: OpenAICompatibleServer) -> None:
    assert server.requests, "no turn reached the model"
    assert all(len(notebooks_in(request)) == 1 for request in server.requests), [
        notebooks_in(request) for request in server.requests
    ]
    for name in NAMES:
        tape = open_tape(session_tape_name(folder, name), home=home, create=False)
        prompts = [entry.payload["content"] for entry in tape.read() if entry.payload.get("role") == "user"]
        assert [p for p in prompts if "question of" in p] == list(asks_of(name)) * (len(prompts) // 2)
    assert not (home / "tapes" / f"{session_tape_name(folder, 'default')}.jsonl").exists()


def test_jupyter_execute_with_two_notebooks_gives_each_its_own_tape(
    folder: Path, tmp_path: Path, openai_server: OpenAICompatibleServer
) -> None:
    run([str(BIN / "jupyter-execute"), *NAMES], folder, environment(tmp_path, openai_server))
    assert_each_notebook_on_its_own_tape(tmp_path / "home", folder, openai_server)


def test_jupyter_execute_in_either_order_from_another_folder_gives_each_its_own_tape(
    folder: Path, tmp_path: Path, openai_server: OpenAICompatibleServer
) -> None:
    paths = [str(folder / name) for name in reversed(NAMES)]
    run([str(BIN / "jupyter-execute"), *paths], tmp_path, environment(tmp_path, openai_server))
    assert_each_notebook_on_its_own_tape(tmp_path / "home", folder, openai_server)


def test_papermill_called_from_a_script_for_two_notebooks_gives_each_its_own_tape(
    folder: Path, tmp_path: Path, openai_server: OpenAICompatibleServer
) -> None:
    script = tmp_path / "nightly.py"
    script.write_text(
        textwrap.dedent(
            """
            import papermill
            for name in ("analysis.ipynb", "report.ipynb"):
                papermill.execute_notebook(name, "out-" + name, parameters={"region": "north"}, progress_bar=False)
            """
        )
    )
    env = environment(tmp_path, openai_server)
    run([sys.executable, str(script)], folder, env)
    run([sys.executable, str(script)], folder, env)  # again, with both outputs beside their notebooks
    assert_each_notebook_on_its_own_tape(tmp_path / "home", folder, openai_server)


def test_python_m_papermill_with_an_existing_output_names_its_input(
    folder: Path, tmp_path: Path, openai_server: OpenAICompatibleServer
) -> None:
    env = environment(tmp_path, openai_server)
    for name in NAMES:
        (folder / f"out-{name}").write_bytes((folder / name).read_bytes())  # a run before left its output
        run([sys.executable, "-m", "papermill", "--no-progress-bar", name, f"out-{name}"], folder, env)
    assert_each_notebook_on_its_own_tape(tmp_path / "home", folder, openai_server)


def test_nbconvert_run_again_onto_an_existing_output_names_its_notebook(
    folder: Path, tmp_path: Path, openai_server: OpenAICompatibleServer
) -> None:
    env = environment(tmp_path, openai_server)
    for name in NAMES:
        command = [str(BIN / "jupyter-nbconvert"), "--to", "notebook", "--execute", name, "--output", f"run-{name}"]
        run(command, folder, env)
        run(command, folder, env)  # the output from the first run now exists beside it
    assert_each_notebook_on_its_own_tape(tmp_path / "home", folder, openai_server)


def test_an_nbclient_script_running_two_notebooks_gives_each_its_own_tape(
    folder: Path, tmp_path: Path, openai_server: OpenAICompatibleServer
) -> None:
    script = tmp_path / "execute.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import nbformat
            from nbclient import NotebookClient
            for name in ("analysis.ipynb", "report.ipynb"):
                document = nbformat.read({str(folder)!r} + "/" + name, as_version=4)
                NotebookClient(document, resources={{"metadata": {{"path": {str(folder)!r}}}}}).execute()
            """
        )
    )
    run([sys.executable, str(script)], tmp_path, environment(tmp_path, openai_server))
    assert_each_notebook_on_its_own_tape(tmp_path / "home", folder, openai_server)


def test_terminal_ipython_running_a_notebook_uses_that_notebooks_tape(
    folder: Path, tmp_path: Path, openai_server: OpenAICompatibleServer
) -> None:
    env = environment(tmp_path, openai_server)
    for name in NAMES:
        run([str(BIN / "ipython"), name], folder, env)
    assert_each_notebook_on_its_own_tape(tmp_path / "home", folder, openai_server)


def test_two_notebooks_whose_cells_are_the_same_each_say_so_and_keep_a_tape_of_their_own(
    tmp_path: Path, openai_server: OpenAICompatibleServer
) -> None:
    folder = tmp_path / "twins"
    folder.mkdir()
    for name in NAMES:
        notebook(folder, name, ("The same question",))
    env = environment(tmp_path, openai_server)
    run([str(BIN / "jupyter-execute"), "--inplace", *NAMES], folder, env)
    home = tmp_path / "home"
    tapes = sorted(path.name for path in (home / "tapes").glob("*.jsonl"))
    assert len(tapes) == 2 and f"{session_tape_name(folder, 'default')}.jsonl" not in tapes
    asked = [json.dumps(request["messages"]).count("The same question") for request in openai_server.requests]
    assert asked == [1, 1]  # each kernel's request holds its own notebook's question alone
    for name in NAMES:
        outputs = nbformat.read(folder / name, as_version=4).cells[1].outputs
        assert sum("this kernel cannot tell which notebook it runs" in json.dumps(o) for o in outputs) == 1
