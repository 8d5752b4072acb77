"""The code base stays ruff-clean everywhere and mypy-clean in the package (the layer order: test_import_graph.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *command], cwd=ROOT, capture_output=True, text=True)


def test_ruff_finds_nothing() -> None:
    checked = run("ruff", "check", "bub_nb", "tests", "benchmarks")
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_mypy_finds_nothing_in_the_package() -> None:
    checked = run("mypy", "bub_nb")
    assert checked.returncode == 0, checked.stdout + checked.stderr
