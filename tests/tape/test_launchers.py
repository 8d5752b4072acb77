"""Which notebook a kernel runs, from its launcher's command line and the cells it ran."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from bub_nb.tape.launchers import folder_notebooks, matching_notebooks, named_notebooks


def notebook(path: Path, *cells: str, papermill_input: str | None = None) -> Path:
    document = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    if papermill_input is not None:
        injected = nbformat.v4.new_code_cell("# Parameters\nregion = 'north'\n")
        injected.metadata["tags"] = ["injected-parameters"]
        document.cells.insert(0, injected)
        document.metadata["papermill"] = {"input_path": papermill_input, "output_path": path.name}
    nbformat.write(document, path)
    return path.resolve()


@pytest.fixture
def two(tmp_path: Path) -> tuple[Path, Path]:
    return (
        notebook(tmp_path / "a.ipynb", "%load_ext bub_nb", "%%bub\nabout a"),
        notebook(tmp_path / "b.ipynb", "%load_ext bub_nb", "%%bub\nabout b"),
    )


@pytest.mark.parametrize(
    "args",
    [
        ["papermill", "a.ipynb", "b.ipynb"],
        ["/usr/bin/python3", "-m", "papermill", "--no-progress-bar", "a.ipynb", "b.ipynb"],
        ["/venv/bin/python", "/venv/bin/papermill", "a.ipynb", "b.ipynb", "-p", "x", "1"],
    ],
)
def test_papermill_names_its_input_however_it_was_started_and_whatever_output_exists(
    args: list[str], two: tuple[Path, Path], tmp_path: Path
) -> None:
    assert named_notebooks(args, tmp_path) == (two[0],)


def test_nbconvert_names_its_inputs_never_its_output(two: tuple[Path, Path], tmp_path: Path) -> None:
    args = ["jupyter-nbconvert", "--execute", "--to", "notebook", "--output", "b.ipynb", "a.ipynb"]
    assert named_notebooks(args, tmp_path) == (two[0],)
    assert named_notebooks(["jupyter-execute", "b.ipynb", "a.ipynb"], tmp_path) == (two[1], two[0])


def test_the_cells_run_tell_two_notebooks_apart(two: tuple[Path, Path]) -> None:
    assert matching_notebooks(two, ["%load_ext bub_nb"]) == two
    assert matching_notebooks(two, ["%load_ext bub_nb", "%%bub\nabout b\n"]) == (two[1],)


def test_a_notebook_holding_only_some_of_the_cells_run_is_not_the_one(two: tuple[Path, Path]) -> None:
    assert matching_notebooks(two, ["%load_ext bub_nb", "%%bub\nabout c"]) == ()


def test_a_papermill_output_stands_for_its_input_and_the_parameters_cell_is_left_out(
    two: tuple[Path, Path], tmp_path: Path
) -> None:
    output = notebook(tmp_path / "out-a.ipynb", "%load_ext bub_nb", "%%bub\nabout a", papermill_input="a.ipynb")
    ran = ["# Parameters\nregion = 'north'\n", "%load_ext bub_nb", "%%bub\nabout a"]
    assert matching_notebooks([*two, output], ran) == (two[0],)
    assert set(folder_notebooks(tmp_path)) == {*two, output}


def test_two_notebooks_with_the_same_cells_cannot_be_told_apart(tmp_path: Path) -> None:
    twins = tuple(notebook(tmp_path / name, "%load_ext bub_nb", "%%bub\nsame") for name in ("x.ipynb", "y.ipynb"))
    assert matching_notebooks(twins, ["%load_ext bub_nb", "%%bub\nsame"]) == twins
