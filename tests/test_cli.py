"""``bub-nb``: the main job runs a notebook headless and says where the notebook and its tape are."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from bub_nb.cli import main
from bub_nb.tape import open_tape, session_tape_name


def notebook(path: Path, *sources: str) -> Path:
    cells = [nbformat.v4.new_code_cell(source) for source in sources]
    nbformat.write(nbformat.v4.new_notebook(cells=cells), path)
    return path


def test_run_executes_the_notebook_and_reports_its_tape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = notebook(tmp_path / "lesson.ipynb", "%load_ext bub_nb", "%%bub\nHello", "%handoff lesson/1")
    output = tmp_path / "out" / "lesson.ipynb"
    assert main(["run", str(source), "--home", str(tmp_path / "home"), "-o", str(output)]) == 0
    printed = capsys.readouterr().out
    tape = open_tape(session_tape_name(tmp_path, "lesson.ipynb"), home=tmp_path / "home")
    assert f"Executed notebook: {output.resolve()}" in printed and f"{tape.name}.jsonl" in printed
    assert tape.last_anchor() is not None and tape.last_anchor().name == "lesson/1"
    executed = nbformat.read(output, as_version=4)
    assert "offline teaching model" in str(executed.cells[1].outputs)


def test_a_failing_cell_is_one_line_and_exit_code_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = notebook(tmp_path / "broken.ipynb", "%load_ext bub_nb", "%handoff")
    assert main(["run", str(source), "--home", str(tmp_path / "home"), "-o", str(tmp_path / "o.ipynb")]) == 1
    error = capsys.readouterr().err.strip().splitlines()
    assert error[-1].startswith("A cell failed:") and "UsageError" in error[-1]


def test_a_missing_notebook_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(tmp_path / "nowhere.ipynb")]) == 2
    assert "nowhere.ipynb" in capsys.readouterr().err


def test_the_quickstart_runs_on_an_openai_compatible_endpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, openai_server: object, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same main job, with BUB_MODEL and a key set: every %%bub cell goes through the openai client."""
    monkeypatch.setenv("BUB_MODEL", "openai:quickstart-model")
    monkeypatch.setenv("BUB_API_BASE", openai_server.base_url)  # type: ignore[attr-defined]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000000000000000000000")
    source = Path(__file__).resolve().parents[1] / "examples" / "quickstart.ipynb"
    copy = tmp_path / "quickstart.ipynb"
    copy.write_bytes(source.read_bytes())
    assert main(["run", str(copy), "--home", str(tmp_path / "home"), "-o", str(tmp_path / "out.ipynb")]) == 0
    assert "on model 'openai:quickstart-model'" in capsys.readouterr().out
    requests = openai_server.requests  # type: ignore[attr-defined]
    cells = nbformat.read(copy, as_version=4).cells
    assert len(requests) == sum(1 for cell in cells if cell.cell_type == "code" and cell.source.startswith("%%bub"))
    assert all(r["model"] == "quickstart-model" and r["stream"] for r in requests)
    tape = open_tape("quickstart", home=tmp_path / "home")  # the lesson's tape: the notebook starts a lesson
    assert len(tape) and "sk-test" not in tape.path.read_text()


def test_a_run_whose_only_turn_fails_names_no_tape(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A turn refused for want of a key writes nothing, so the run says no tape was written rather than name one."""
    for variable in ("OPENAI_API_KEY", "BUB_API_KEY", "BUB_API_BASE", "OPENAI_BASE_URL"):
        monkeypatch.delenv(variable, raising=False)
    source = notebook(tmp_path / "keyless.ipynb", "%load_ext bub_nb", "%%bub\nHello")
    home = tmp_path / "home"
    args = ["run", str(source), "--home", str(home), "-o", str(tmp_path / "o.ipynb"), "-m", "openai:gpt-4o-mini"]
    assert main(args) == 1
    said = capsys.readouterr()
    assert "Tape: none written" in said.out and ".jsonl" not in said.out
    assert not list(home.glob("tapes/*.jsonl"))
    assert said.err.strip().splitlines()[-1].startswith("A cell failed: UsageError")
