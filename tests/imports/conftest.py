"""Fixtures for the import tests: a Bub home, and the SQLite logs llm and the Agents SDK write themselves."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness.logs import write_agents_session, write_llm_logs

from bub_nb.testing import OpenAICompatibleServer


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A Bub home for the imported tapes."""
    return tmp_path / "bub-home"


@pytest.fixture
def llm_logs(tmp_path: Path, openai_server: OpenAICompatibleServer) -> Path:
    return write_llm_logs(tmp_path / "logs.db", openai_server)


@pytest.fixture
def agents_session(tmp_path: Path, openai_server: OpenAICompatibleServer) -> Path:
    return write_agents_session(tmp_path / "session.db", openai_server)
