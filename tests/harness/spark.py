"""PySpark in local mode, in a process of its own, for the tests that read what bub_nb exports as a cluster would.

PySpark is 470 MB of jars, too much for the ``dev`` extra every install pays for, so the pin of the ``spark`` extra
in ``pyproject.toml`` is installed once per pin with ``pip install --target`` into
``${BUB_NB_CACHE:-~/.cache/bub_nb}/spark/<hash>`` (about 80 s from the index, then nothing). A script runs with that
folder on its ``PYTHONPATH`` and prints its answer as JSON. Without a Java runtime or the index a test skips, and
fails under ``CI=true``.
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
from typing import Any

import pytest
from filelock import FileLock

ROOT = Path(__file__).resolve().parents[2]


def _missing(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(reason)
    pytest.skip(reason)


def spark_packages() -> Path:
    """The folder holding the ``spark`` extra's pins, installed on first use."""
    pins = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["spark"]
    cache = Path(os.environ.get("BUB_NB_CACHE") or Path.home() / ".cache" / "bub_nb").expanduser() / "spark"
    key = hashlib.sha256("\n".join(pins).encode()).hexdigest()[:16]
    target, done = cache / key, cache / f"{key}.done"
    cache.mkdir(parents=True, exist_ok=True)
    with FileLock(str(cache / f"{key}.lock")):
        if not done.exists():
            shutil.rmtree(target, ignore_errors=True)  # what an interrupted install left half made
            pip = [sys.executable, "-m", "pip", "install", "-q", "--no-warn-script-location", "--target", str(target)]
            installed = subprocess.run([*pip, *pins], capture_output=True, text=True)
            if installed.returncode != 0:
                why = installed.stderr.strip().splitlines()[-1:] or ["?"]
                _missing(f"the spark extra ({', '.join(pins)}) could not be installed: {why[0]}")
            done.touch()
    return target


def run_spark(script: str, *args: str, timeout: float = 600) -> Any:
    """``script`` run by the suite's Python with PySpark importable and ``args`` in ``sys.argv[1:]``; the JSON
    its last line of output holds."""
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        _missing("Spark needs a Java runtime (apt-get install default-jre-headless; sudo bash .ci/prepare does)")
    target = spark_packages()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(target), os.environ.get("PYTHONPATH", "")]),
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    env.pop("SPARK_HOME", None)  # the installed pyspark's own jars, not a Spark found elsewhere
    done = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, env=env, timeout=timeout
    )
    if done.returncode != 0:
        raise AssertionError(f"the Spark script failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


SESSION = """
from pyspark.sql import SparkSession

spark = (
    SparkSession.builder.master("local[1]")
    .appName("bub_nb tests")
    .config("spark.ui.enabled", "false")
    .config("spark.sql.shuffle.partitions", "1")
    .config("spark.sql.session.timeZone", "UTC")
    .getOrCreate()
)
spark.sparkContext.setLogLevel("ERROR")
"""
"""The opening of a script: ``spark``, a local session of one core, its clock in UTC."""
