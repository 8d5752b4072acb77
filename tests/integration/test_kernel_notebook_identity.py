"""In a real kernel: ``%run other.ipynb`` keeps the other notebook's turns on its own tape, and a kernel that
cannot tell its notebook yet waits for the cells that tell it before choosing a tape."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
from harness.kernel import kernel_environment, running_kernel

from bub_nb.tape import open_tape, session_tape_name
from bub_nb.testing import OpenAICompatibleServer


def write_notebook(path: Path, *cells: str) -> Path:
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells]), path)
    return path


def endpoint(home: Path, server: OpenAICompatibleServer, **more: str) -> dict[str, str]:
    return kernel_environment(
        home, BUB_MODEL="openai:test-model", BUB_API_BASE=server.base_url, BUB_API_KEY="test-key-not-secret", **more
    )


def users(home: Path, folder: Path, name: str) -> list[str]:
    tape = open_tape(session_tape_name(folder, name), home=home, create=False)
    return [e.payload["content"] for e in tape.read() if e.kind == "message" and e.payload.get("role") == "user"]


def test_run_of_another_notebook_keeps_its_turns_on_that_notebooks_tape(
    tmp_path: Path, openai_server: OpenAICompatibleServer
) -> None:
    home = tmp_path / "home"
    write_notebook(tmp_path / "setup.ipynb", "%load_ext bub_nb", "%%bub\nWhat does setup prepare?")
    this = tmp_path / "analysis.ipynb"
    write_notebook(this)
    with running_kernel(tmp_path, endpoint(home, openai_server, JPY_SESSION_NAME=str(this))) as kernel:
        kernel.ok("%%bub\nFirst question of analysis")
        kernel.ok("%run setup.ipynb")
        kernel.ok("%%bub\nSecond question of analysis")
    assert users(home, tmp_path, "analysis.ipynb") == ["First question of analysis", "Second question of analysis"]
    assert users(home, tmp_path, "setup.ipynb") == ["What does setup prepare?"]
    last = json.dumps(openai_server.last_request["messages"])
    assert "First question of analysis" in last and "setup prepare" not in last


def test_a_kernel_whose_first_cells_fit_two_notebooks_chooses_its_tape_once_a_cell_tells_them_apart(
    tmp_path: Path, openai_server: OpenAICompatibleServer
) -> None:
    home = tmp_path / "home"
    for name in ("a.ipynb", "b.ipynb"):
        write_notebook(tmp_path / name, "x = 1", "%load_ext bub_nb", f"%%bub\nQuestion of {name}")
    with running_kernel(tmp_path, endpoint(home, openai_server), load=False) as kernel:
        kernel.ok("x = 1")
        kernel.ok("%load_ext bub_nb")  # both notebooks hold these two cells: which one runs is not known yet
        shown = kernel.ok("%%bub\nQuestion of b.ipynb")
    assert "cannot tell" not in shown
    assert users(home, tmp_path, "b.ipynb") == ["Question of b.ipynb"]
    written = [path.name for path in (home / "tapes").glob("*.jsonl")]
    assert written == [f"{session_tape_name(tmp_path, 'b.ipynb')}.jsonl"]
