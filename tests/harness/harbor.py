"""Harbor's own ATIF models (``harbor.models.trajectories``), from its wheel on PyPI when the tests first need them.

Harbor itself needs Python 3.12 and a large stack, but its trajectory models are plain pydantic. The wheel is
downloaded once with pip (no dependencies, for Python 3.12) into the bub_nb cache, and only that subpackage is
unpacked and imported; nothing of Harbor's is kept in this repository.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

VERSION = "0.26.0"
_MODELS = "harbor/models/trajectories/"


def _unpacked() -> Path:
    cache = Path(os.environ.get("BUB_NB_CACHE") or "~/.cache/bub_nb").expanduser() / "harbor" / VERSION
    if (cache / _MODELS / "__init__.py").is_file():
        return cache
    with tempfile.TemporaryDirectory() as folder:
        command = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:"]
        command += ["--python-version", "3.12", "-d", folder, f"harbor=={VERSION}"]
        done = subprocess.run(command, capture_output=True, text=True, timeout=300)
        wheels = list(Path(folder).glob("harbor-*.whl"))
        if done.returncode != 0 or not wheels:
            reason = f"Harbor {VERSION}'s wheel could not be downloaded: {done.stderr.strip()[-300:]}"
            if os.environ.get("CI"):
                pytest.fail(reason)
            pytest.skip(reason)
        with zipfile.ZipFile(wheels[0]) as wheel:
            members = [name for name in wheel.namelist() if name.startswith(_MODELS) and name.endswith(".py")]
            wheel.extractall(cache, members)
    for package in ("harbor", "harbor/models"):
        (cache / package / "__init__.py").touch()  # the wheel's own would import the whole of Harbor
    return cache


def harbor_trajectories() -> ModuleType:
    """``harbor.models.trajectories``, imported from the unpacked models."""
    folder = str(_unpacked())
    if folder not in sys.path:
        sys.path.insert(0, folder)
    import harbor.models.trajectories as trajectories

    return trajectories
