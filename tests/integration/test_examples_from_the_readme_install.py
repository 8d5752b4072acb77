"""Every example notebook runs with ``bub-nb run`` from the README's own install: ``[lab]`` alone, in a fresh venv.

The suite's own environment holds ``[dev]``, which brings far more than a user installs, so an example that
needs a package ``[lab]`` lacks would pass there and fail for the user. Here the virtual environment holds only
what ``pip install -e ".[lab]"`` brings. Making it takes minutes, so it is kept under
``${BUB_NB_CACHE:-~/.cache/bub_nb}/lab-venv/<key>``, keyed on the ``[project]`` table of ``pyproject.toml`` and
the checkout's path: a run pays once, and a change of dependencies makes a new one.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from filelock import FileLock
from harness.notebooks import EXAMPLES, NOTEBOOKS, UNSET

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1800)]

ROOT = Path(__file__).resolve().parents[2]


def lab_venv() -> Path:
    """A virtual environment with ``.[lab]`` of this checkout installed, made once per pyproject.toml."""
    cache = Path(os.environ.get("BUB_NB_CACHE") or Path.home() / ".cache" / "bub_nb").expanduser() / "lab-venv"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    key = hashlib.sha256(json.dumps([project, str(ROOT)], sort_keys=True).encode()).hexdigest()[:16]
    venv, done = cache / key, cache / f"{key}.done"
    cache.mkdir(parents=True, exist_ok=True)
    with FileLock(str(cache / f"{key}.lock")):
        if not done.exists():
            shutil.rmtree(venv, ignore_errors=True)  # a venv an interrupted run left half made
            python = shutil.which("python3") or sys.executable
            subprocess.run([python, "-m", "venv", str(venv)], check=True)
            pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "-e", f"{ROOT}[lab]"]
            subprocess.run(pip, check=True, capture_output=True, text=True)
            done.touch()
    return venv


@pytest.fixture(scope="module")
def venv() -> Path:
    return lab_venv()


def test_the_lab_install_holds_no_test_dependency(venv: Path) -> None:
    """What the examples run on is what a user has: none of [dev]'s packages slipped in."""
    listed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True
    )
    installed = {line.split("==")[0].lower() for line in listed.stdout.splitlines()}
    assert "jupyterlab" in installed and "bub_nb" in installed | {name.replace("-", "_") for name in installed}
    assert not installed & {"pytest", "duckdb", "psycopg", "hypothesis", "polars"}


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_example_runs_from_the_readme_install(name: str, venv: Path, tmp_path: Path) -> None:
    folder = tmp_path / "examples"
    shutil.copytree(EXAMPLES, folder, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "*.idx", "*.lock"))
    env = {key: value for key, value in os.environ.items() if key not in (*UNSET, "BUB_MODEL", "BUB_HOME")}
    env["JUPYTER_DATA_DIR"] = str(tmp_path / "jupyter")  # no kernel the developer installed stands in for the venv's
    command = [str(venv / "bin" / "bub-nb"), "run", str(folder / name), "--home", str(tmp_path / "home")]
    done = subprocess.run(
        [*command, "-o", str(tmp_path / "out" / name)], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Executed notebook: {tmp_path / 'out' / name}" in done.stdout and "Tape: " in done.stdout
