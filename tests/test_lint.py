"""The code base stays ruff-clean everywhere and mypy-clean in the package."""

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


def test_only_the_notebook_layer_imports_ipython_or_ipywidgets() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in (ROOT / "bub_nb").rglob("*.py")
        if "notebook" not in path.relative_to(ROOT / "bub_nb").parts
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if line.lstrip().startswith(("import IPython", "from IPython", "import ipywidgets", "from ipywidgets"))
    ]
    assert offenders == []


def test_imports_point_down_the_layers() -> None:
    """tape < context, memory < export < agent < notebook: a module never imports a layer above its own."""
    rank = {"tape": 0, "context": 1, "memory": 1, "export": 2, "agent": 3, "notebook": 4}
    offenders = []
    for path in (ROOT / "bub_nb").rglob("*.py"):
        parts = path.relative_to(ROOT / "bub_nb").parts
        if parts[0] not in rank:
            continue
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            words = line.split()
            if len(words) >= 2 and words[0] in ("import", "from") and words[1].startswith("bub_nb."):
                target = words[1].split(".")[1]
                if target in rank and rank[target] > rank[parts[0]]:
                    offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert offenders == []
