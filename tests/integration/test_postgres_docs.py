"""docs/postgres.md says what the database does: its schema version is the one ``bub-nb db init`` reaches, and the
block under "Trying it on one machine" runs as written (it starts a server, so it is not run with the other pages)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from harness.tapes import postgres_server
from test_docs import blocks

from bub_nb.tape.stores.postgres.schema import VERSION

PAGE = Path(__file__).resolve().parents[2] / "docs" / "postgres.md"

pytestmark = pytest.mark.integration


def test_the_page_gives_the_schema_version_the_package_migrates_to() -> None:
    text = PAGE.read_text()
    assert re.findall(r"version \((\d+) now", text) == [str(VERSION)]
    assert all(int(number) <= VERSION for number in re.findall(r"schema version (\d+)", text))


def test_trying_it_on_one_machine_runs_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    postgres_server()  # the binaries are there, or this skips (fails under CI) saying what to install
    text = PAGE.read_text()
    start = text.index("## Trying it on one machine")
    (block,) = [b for b in blocks(PAGE) if b.language == "python" and text.count("\n", 0, start) < b.line]
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    exec(compile(block.source, f"{PAGE.name}:{block.line}", "exec"), namespace)
    shown = capsys.readouterr().out
    assert "tape: try-me" in shown and "entries: 2" in shown and "last anchor: session/start" in shown
