"""The real Bub (0.5.1, from PyPI) in a Python 3.12 virtual environment of its own, made once in the bub_nb cache.

Bub needs Python 3.12 or newer, and bub_nb's tests run on 3.11, so Bub never shares the tests' interpreter: the
environment is made with ``python3.12`` under ``${BUB_NB_CACHE:-~/.cache/bub_nb}/bub/<hash of the pins>`` (a few
minutes the first time, nothing after) and Bub runs there as a program: its CLI (``bub -w <folder> run``) or a
short script against its own store and context API. Without ``python3.12`` the tests skip, except under
``CI=true``, where they fail.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

PINS = ("bub==0.5.1",)
"""What the environment holds; its folder is named by a hash of these lines, so a new pin makes a new one."""

PLUGIN_PINS = ("bub-web-search==0.1.1", "bub-schedule==0.1.1")
"""Bub's plugins from PyPI, installed beside Bub and bub_nb in an environment of their own."""

REPO = Path(__file__).resolve().parents[2]


def _missing(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


def python312() -> str:
    """A Python 3.12 interpreter: ``python3.12`` on the path (pyenv's shims included)."""
    for candidate in (
        shutil.which("python3.12"),
        *sorted(Path("~/.pyenv/versions").expanduser().glob("3.12*/bin/python3.12")),
    ):
        if candidate and subprocess.run([str(candidate), "--version"], capture_output=True).returncode == 0:
            return str(candidate)
    _missing("python3.12 is not installed; Bub 0.5.1 needs Python 3.12 or newer")
    raise AssertionError  # unreachable: _missing raises


def bub_venv(*extra: str, with_bub_nb: bool = False) -> Path:
    """The environment's folder, made once per set of pins (``extra`` adds packages). With ``with_bub_nb`` it holds
    bub_nb's dependencies too, made once per ``pyproject.toml``; :func:`bub_python` then imports this clone's
    bub_nb from its sources, so an edit needs no reinstall."""
    pins = (*PINS, *extra, *([(REPO / "pyproject.toml").read_text()] if with_bub_nb else []))
    digest = hashlib.sha256("\n".join(pins).encode()).hexdigest()[:16]
    folder = Path(os.environ.get("BUB_NB_CACHE") or "~/.cache/bub_nb").expanduser() / "bub" / digest
    ready = folder / "ready"
    if ready.is_file():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    folder.parent.mkdir(parents=True, exist_ok=True)
    made = subprocess.run([python312(), "-m", "venv", str(folder)], capture_output=True, text=True, timeout=300)
    if made.returncode != 0:
        _missing(f"a Python 3.12 environment could not be made: {made.stderr.strip()[-300:]}")
    install = [str(folder / "bin" / "python"), "-m", "pip", "install", "-q", *PINS, *extra]
    if with_bub_nb:
        install.append(str(REPO))
    try:
        done = subprocess.run(install, capture_output=True, text=True, timeout=3600)
    except subprocess.TimeoutExpired:
        shutil.rmtree(folder, ignore_errors=True)
        _missing(f"installing {' '.join(install[5:])} took over an hour")
    if done.returncode != 0:
        shutil.rmtree(folder, ignore_errors=True)
        _missing(f"Bub could not be installed from PyPI: {done.stderr.strip()[-300:]}")
    ready.touch()
    return folder


def bub_env(home: Path, base_url: str, **settings: str) -> dict[str, str]:
    """The environment Bub runs in: its home, and its model behind the local OpenAI-compatible endpoint at
    ``base_url`` (``""``: ``settings`` say where)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("BUB_", "OPENAI_", "ANTHROPIC_"))}
    env.update(BUB_HOME=str(home), BUB_MODEL="openai:bub-nb-test", NO_COLOR="1")
    if base_url:
        env.update(BUB_API_KEY="test-key", BUB_API_BASE=base_url)
    env.update(settings)
    return env


def run_bub(home: Path, base_url: str, *args: str, **settings: str) -> subprocess.CompletedProcess[str]:
    """The real ``bub`` CLI with ``args``, in ``home``; its output is returned whatever its exit status."""
    folder = bub_venv()
    command = [str(folder / "bin" / "bub"), *args]
    return subprocess.run(
        command, env=bub_env(home, base_url, **settings), capture_output=True, text=True, timeout=300, check=False
    )


def bub_python(script: str, *, home: Path, venv: Path | None = None, **settings: str) -> Any:
    """Run ``script`` with Bub's interpreter in ``home``, its working folder too (this clone's bub_nb importable);
    what it prints last, as JSON."""
    folder = venv or bub_venv()
    env = {key: value for key, value in os.environ.items() if not key.startswith("BUB_")}
    env.update(BUB_HOME=str(home), PYTHONPATH=str(REPO), **settings)
    home.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [str(folder / "bin" / "python"), "-c", script], cwd=home, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"Bub's script failed:\n{done.stderr[-3000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


__all__ = ["PINS", "PLUGIN_PINS", "bub_env", "bub_python", "bub_venv", "python312", "run_bub"]
