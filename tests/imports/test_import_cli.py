"""``bub-nb tapes import PATH``: another agent's log becomes a tape from the command line, in one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness.logs import DATA

from bub_nb.cli import main
from bub_nb.tape import open_tape


def test_import_writes_the_tape_and_prints_the_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home = tmp_path / "home"
    sample = DATA / "codex" / "rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl"

    assert main(["tapes", "import", str(sample), "--name", "codex-run", "--home", str(home)]) == 0

    printed = capsys.readouterr().out
    assert (
        "Imported 14 codex records" in printed and "13 mapped, 1 kept as events (future_synthetic_record ×1)" in printed
    )
    assert "codex-run.jsonl" in printed
    assert len(open_tape("codex-run", home=home).read(kinds=["tool_call"])) == 3


def test_a_second_import_to_the_same_name_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home, sample = str(tmp_path / "home"), str(DATA / "atif" / "rfc-0001-example.json")
    assert main(["tapes", "import", sample, "--format", "atif", "--name", "spec", "--home", home]) == 0
    capsys.readouterr()

    assert main(["tapes", "import", sample, "--name", "spec", "--home", home]) == 2

    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "Tape 'spec' already holds 7 entries" in error
