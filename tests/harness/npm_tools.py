"""Programs from the npm registry that tests drive as real parts (MCP's reference server), installed once per
pinned version into a cache outside the clone, as llama-server is built once: the first use pays, later ones find it.

Under ``CI=true`` a missing ``npm`` fails the test; elsewhere it skips, saying what to install.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from filelock import FileLock

#: The npm packages the tests run, pinned in this one place: name -> (version, the program it installs).
NPM_TOOLS = {
    "@modelcontextprotocol/server-everything": ("2026.8.31", "mcp-server-everything"),
}


def cache_folder() -> Path:
    return Path(os.environ.get("BUB_NB_CACHE") or Path.home() / ".cache" / "bub_nb") / "npm"


def npm_program(package: str) -> Path:
    """The pinned ``package``'s program, installed into the cache on first use."""
    version, program = NPM_TOOLS[package]
    folder = cache_folder() / f"{package.replace('/', '+')}@{version}"
    binary = folder / "node_modules" / ".bin" / program
    if binary.exists():
        return binary
    npm = shutil.which("npm")
    if npm is None:
        if os.environ.get("CI"):
            pytest.fail("npm is missing: .ci/run installs nodejs and npm")
        pytest.skip("npm is not installed (apt-get install nodejs npm) to run MCP's reference server")
    folder.mkdir(parents=True, exist_ok=True)
    with FileLock(str(folder) + ".lock"):
        if not binary.exists():
            subprocess.run(
                [npm, "install", "--prefix", str(folder), "--no-audit", "--no-fund", f"{package}@{version}"],
                check=True,
                capture_output=True,
                timeout=600,
            )
    return binary
