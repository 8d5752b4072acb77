"""llama.cpp's ``llama-server`` for the tests: the built binary, or a skip (a failure in CI) saying how to build it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.llama_server import llama_server_binary


def llama_binary() -> Path:
    """The ``llama-server`` that ``.ci/build-llama-server`` built; skips without it, and fails under ``CI=true``."""
    found = llama_server_binary()
    if found is None:
        reason = "llama-server is not built: run .ci/build-llama-server (or set BUB_NB_LLAMA_SERVER)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return found
