"""Fixtures shared by the test suite.

- ``openai_server``: a running :class:`bub_nb.testing.OpenAICompatibleServer`; script it with
  ``reply``, ``reply_tool_calls``, ``fail``, ``fail_context_length``, ``delay`` and ``drop_after``,
  point the real openai client at ``openai_server.base_url``, read ``openai_server.requests``.
- ``tape``: a file tape on ``tmp_path``; ``model``: an ``OpenAIModel`` on ``openai_server`` with a patient
  timeout and no retries, closed after the test.
- ``postgres``: the test run's PostgreSQL server (:class:`bub_nb.testing.postgres.PostgresServer`),
  started once; ``harness.tapes.postgres_store()`` gives a store in a fresh schema on it. Skips
  with the reason when the server binaries are missing, and fails in CI.
- ``nb``: a real IPython shell with bub_nb loaded (``harness.shell.Notebook``), its home under ``tmp_path``;
  ``endpoint``: that shell's model set to ``openai_server`` (returned), through the real openai client.
- ``kernel``: a real Jupyter kernel with bub_nb loaded, pointed at ``openai_server``; ``offline_kernel``: the same
  on the offline model (``harness.kernel.Kernel``).
- ``model_environment`` (automatic): every test starts without ``BUB_MODEL``, API keys or base
  URLs from the developer's shell, so no test reaches a real endpoint or depends on local settings.
"""

from __future__ import annotations

import gc
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harness.kernel import Kernel, kernel_environment, running_kernel
from harness.shell import Notebook, loaded_shell

from bub_nb.agent.eventloop import run_sync
from bub_nb.agent.models import OpenAIModel
from bub_nb.tape import FileTapeStore, Tape
from bub_nb.testing import OpenAICompatibleServer

MODEL_VARIABLES = ("BUB_NB_MODEL", "BUB_MODEL", "BUB_API_KEY", "OPENAI_API_KEY", "BUB_API_BASE", "OPENAI_BASE_URL")


#: Fixtures that start a real kernel, browser or database: a test using one is an integration test.
REAL_PARTS = {"kernel", "offline_kernel", "postgres"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test under ``tests/integration/``, or using a real kernel or database, ``integration``."""
    for item in items:
        if "integration" in item.path.parts or REAL_PARTS & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.integration)


#: The parts of the full suite a machine may lack, as the reasons their tests skip with name them.
MISSING_PARTS = {
    "postgresql": "PostgreSQL's server binaries",
    "chromium": "Chromium",
    "llama-server": "a built llama-server",
    "harbor": "Harbor's wheel (from PyPI)",
}


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The skips in one line: how many tests each missing part held back, and the one command that prepares them."""
    missing: Counter[str] = Counter()
    for report in terminalreporter.stats.get("skipped", []):
        reason = str(report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr).lower()
        missing[next((part for key, part in MISSING_PARTS.items() if key in reason), "other")] += 1
    if not missing:
        return
    others = missing.pop("other", 0)
    parts = ", ".join(f"{part} ({count})" for part, count in missing.most_common())
    line = f"{missing.total() + others} tests skipped"
    if parts:
        line += f": this machine lacks {parts}; sudo bash .ci/prepare installs and builds them (see README.md)"
    if others:
        line += f"{';' if parts else ':'} {others} for other reasons"
    terminalreporter.write_line(line + " (pytest -rs lists every reason)", yellow=True, bold=True)


def pytest_unconfigure(config: pytest.Config) -> None:
    """The run is over: IPython's exit handler collects garbage once more, and over the heap a whole suite leaves
    that pass took minutes. Frozen objects are left out of every later collection, so exit is prompt."""
    gc.freeze()


@pytest.fixture(autouse=True)
def model_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in MODEL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("BUB_STORE", raising=False)


@pytest.fixture(autouse=True)
def database_stores_closed() -> Iterator[None]:
    """Close the database stores a test opened when it ends, so their pools do not pile up over a run."""
    from harness.tapes import close_stores

    yield
    close_stores()


@pytest.fixture
def postgres() -> Any:
    from harness.tapes import postgres_server

    return postgres_server()


@pytest.fixture
def openai_server() -> Iterator[OpenAICompatibleServer]:
    with OpenAICompatibleServer() as server:
        yield server


@pytest.fixture
def tape(tmp_path: Path) -> Tape:
    return Tape("notebook", FileTapeStore(tmp_path / "tapes"))


@pytest.fixture
def model(openai_server: OpenAICompatibleServer) -> Iterator[OpenAIModel]:
    model = OpenAIModel("test-model", base_url=openai_server.base_url, api_key="test", timeout=60, max_retries=0)
    yield model
    run_sync(model.aclose())  # sync turns share a loop that outlives the test; close its connections now


@pytest.fixture
def nb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Notebook]:
    monkeypatch.setenv("BUB_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.chdir(tmp_path)
    with loaded_shell() as notebook:
        yield notebook


@pytest.fixture
def endpoint(
    nb: Notebook, openai_server: OpenAICompatibleServer, monkeypatch: pytest.MonkeyPatch
) -> OpenAICompatibleServer:
    """``nb``'s turns on ``openai_server`` through the real openai client (``openai:test-model``)."""
    monkeypatch.setenv("BUB_API_BASE", openai_server.base_url)
    monkeypatch.setenv("BUB_API_KEY", "test-key-not-secret")
    nb.run('%config BubMagics.model = "openai:test-model"')
    return openai_server


@pytest.fixture
def kernel(tmp_path: Path, openai_server: OpenAICompatibleServer) -> Iterator[Kernel]:
    home = tmp_path / "home"
    endpoint = {
        "BUB_MODEL": "openai:test-model",
        "BUB_API_BASE": openai_server.base_url,
        "BUB_API_KEY": "test-key-not-secret",
    }
    with running_kernel(tmp_path, kernel_environment(home, **endpoint)) as running:
        yield running


@pytest.fixture
def offline_kernel(tmp_path: Path) -> Iterator[Kernel]:
    with running_kernel(tmp_path) as running:
        yield running


@pytest.fixture
def example_home(tmp_path: Path) -> Path:
    """A copy of the shipped Bub home of example tapes: reading a tape writes its index beside it."""
    import shutil

    home = tmp_path / "bub-home"
    shutil.copytree(Path(__file__).parents[1] / "examples" / "data" / "bub-home", home)
    return home
