"""``discover_logs`` and ``bub-nb tapes import --discover``: this user's Claude Code, Codex and llm logs, found where
the tools keep them, imported once, and what the agents cost by day and project."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from harness.logs import DATA, write_llm_logs

from bub_nb import agents_usage, discover_logs, import_log, open_tape, read_tapes
from bub_nb.cli import main
from bub_nb.errors import BubNbError
from bub_nb.imports import find_logs
from bub_nb.tape.stores.archive import archive_files
from bub_nb.testing import OpenAICompatibleServer

CODEX_RUN = "rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl"
CODEX_HEAD = "rollout-2025-12-30T10-00-00-22222222-2222-4222-8222-222222222222.jsonl"


@pytest.fixture
def user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, openai_server: OpenAICompatibleServer) -> Path:
    """A home folder where Claude Code, Codex and llm left their logs: the published samples of the first two,
    and a logs.db llm itself wrote in its own default place."""
    llm = pytest.importorskip("llm")
    home = tmp_path / "me"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "LLM_USER_PATH", "XDG_CONFIG_HOME", "BUB_HOME"):
        monkeypatch.delenv(name, raising=False)
    project = home / ".claude" / "projects" / "-work-shop"
    project.mkdir(parents=True)
    for sample in sorted((DATA / "claude-code").glob("*.jsonl")):
        shutil.copy(sample, project / sample.name)
    (project / "notes.txt").write_text("not a log")
    day = home / ".codex" / "sessions" / "2026" / "01" / "02"
    day.mkdir(parents=True)
    shutil.copy(DATA / "codex" / CODEX_RUN, day / CODEX_RUN)
    shutil.copy(DATA / "codex" / "sample_codex_session.jsonl", day / CODEX_HEAD)
    (day / "history.jsonl").write_text("{}\n")  # not a rollout
    write_llm_logs(llm.user_dir() / "logs.db", openai_server)
    return home


def spent(tapes: Path) -> Counter[tuple[str, str | None, str]]:
    """Prompt tokens by UTC day, project and tool, from a plain JSON pass over the tape files (no bub_nb)."""
    totals: Counter[tuple[str, str | None, str]] = Counter()
    for path in tapes.glob("*.jsonl"):
        lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        source = next(line["payload"]["data"] for line in lines if line["payload"].get("name") == "import.source")
        for line in lines:
            if line["kind"] == "event" and line["payload"]["name"] == "run" and line["payload"]["data"]["usage"]:
                key = (line["date"][:10], source.get("cwd"), source["format"])
                totals[key] += line["payload"]["data"]["usage"]["prompt_tokens"]
    return totals


def test_each_tool_s_logs_are_found_where_the_tool_keeps_them(user: Path) -> None:
    llm = pytest.importorskip("llm")

    found = {(log.tool, log.path.relative_to(user).as_posix()) for log in find_logs()}

    assert found == {
        ("claude-code", ".claude/projects/-work-shop/dag_compact_after_rewind.jsonl"),
        ("claude-code", ".claude/projects/-work-shop/sidechain_integrated.jsonl"),
        ("codex", f".codex/sessions/2026/01/02/{CODEX_RUN}"),
        ("codex", f".codex/sessions/2026/01/02/{CODEX_HEAD}"),
        ("llm", (llm.user_dir() / "logs.db").relative_to(user).as_posix()),  # llm's own answer
    }


def test_the_tools_own_variables_move_their_folders(
    user: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    moved = tmp_path / "moved"
    shutil.move(user / ".claude", moved / "claude")
    shutil.move(user / ".codex", moved / "codex")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(moved / "claude"))
    monkeypatch.setenv("CODEX_HOME", str(moved / "codex"))
    monkeypatch.setenv("LLM_USER_PATH", str(moved / "llm"))

    found = Counter(log.tool for log in find_logs())

    assert found == {"claude-code": 2, "codex": 2}  # no logs.db where LLM_USER_PATH points


def test_a_second_discovery_imports_nothing(user: Path, tmp_path: Path) -> None:
    bub = tmp_path / "bub"
    first = discover_logs(bub)
    files = {path.name: path.read_bytes() for path in (bub / "tapes").glob("*.jsonl")}

    second = discover_logs(bub)

    assert (first.found, len(first.imported), first.failed) == (5, 5, ())
    assert all(report.accounted for report in first.imported)
    assert (len(second.imported), second.unchanged) == (0, 5)
    assert {path.name: path.read_bytes() for path in (bub / "tapes").glob("*.jsonl")} == files
    assert sorted(read_tapes(bub)["tape_name"].unique()) == sorted(report.tape for report in first.imported)


def test_a_log_that_grew_is_imported_again_whole_and_its_old_tape_archived(
    user: Path, tmp_path: Path, openai_server: OpenAICompatibleServer
) -> None:
    llm = pytest.importorskip("llm")
    bub = tmp_path / "bub"
    first = {report.source: report for report in discover_logs(bub).imported}
    session = user / ".claude" / "projects" / "-work-shop" / "dag_compact_after_rewind.jsonl"
    with session.open("a") as log:  # the session resumed: Claude Code appends its records
        log.write(json.dumps({"type": "summary", "summary": "Resumed later", "leafUuid": "u1"}) + "\n")
    write_llm_logs(llm.user_dir() / "logs.db", openai_server)  # and llm logged another conversation

    again = discover_logs(bub)

    grown = {report.source: report for report in again.replaced}
    assert set(grown) == {str(session), str(llm.user_dir() / "logs.db")}
    assert (len(again.imported), again.unchanged) == (2, 3)
    assert grown[str(session)].records == first[str(session)].records + 1
    assert grown[str(session)].tape == first[str(session)].tape  # the same tape, written afresh
    assert len(archive_files(bub / "tapes")) == 2  # the earlier imports, kept as a reset keeps a tape
    frame = read_tapes(bub)
    assert frame["tape_name"].nunique() == 5  # each log counted once
    usage = agents_usage(frame, by="tool")
    assert usage["tokens_in"].to_dict() == {
        tool: sum(n for (_, _, each), n in spent(bub / "tapes").items() if each == tool) for tool in usage.index
    }


def test_what_the_agents_cost_by_day_and_project(user: Path, tmp_path: Path) -> None:
    bub = tmp_path / "bub"
    discover_logs(bub)
    prices = {"claude-sonnet-4-20250514": {"input": 3.0, "output": 15.0}}

    usage = agents_usage(home=bub, prices=prices)

    found: dict[tuple[str, Any], int] = {
        (day.date().isoformat(), None if pd.isna(project) else project): tokens
        for (day, project), tokens in usage["tokens_in"].items()
    }
    expected: Counter[tuple[str, Any]] = Counter()
    for (day, project, _tool), tokens in spent(bub / "tapes").items():
        expected[(day, project)] += tokens
    assert found == dict(expected) and sum(expected.values()) > 0
    assert list(usage.columns[:5]) == ["turns", "tokens_in", "tokens_out", "cached_tokens", "reasoning_tokens"]
    assert usage.loc[usage.index.get_level_values("project") == "/tmp", "cost"].notna().all()


def test_the_command_line_discovers_and_says_what_it_did(
    user: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = str(tmp_path / "bub")

    assert main(["tapes", "import", "--discover", "--home", home]) == 0
    first = capsys.readouterr().out
    assert main(["tapes", "import", "--discover", "--home", home]) == 0
    second = capsys.readouterr().out

    assert first.splitlines()[0] == "Found 5 logs: 5 new, 0 changed and imported again, 0 unchanged, 0 not imported"
    assert second.splitlines() == ["Found 5 logs: 0 new, 0 changed and imported again, 5 unchanged, 0 not imported"]


def test_a_log_whose_default_tape_is_taken_gets_a_name_of_its_own(user: Path, tmp_path: Path) -> None:
    """Two files of one session (a subagent's file carries its parent's session id) are two tapes."""
    project = user / ".claude" / "projects" / "-work-shop"
    (project / "s1" / "subagents").mkdir(parents=True)
    shutil.copy(project / "dag_compact_after_rewind.jsonl", project / "s1" / "subagents" / "agent-1.jsonl")

    report = discover_logs(tmp_path / "bub")

    assert (report.found, len(report.imported), report.failed) == (6, 6, ())
    assert len({r.tape for r in report.imported}) == 6


def test_a_log_imported_by_hand_before_is_not_imported_twice(user: Path, tmp_path: Path) -> None:
    bub = tmp_path / "bub"
    log = user / ".codex" / "sessions" / "2026" / "01" / "02" / CODEX_RUN
    assert main(["tapes", "import", str(log), "--name", "by-hand", "--home", str(bub)]) == 0

    report = discover_logs(bub)

    assert (report.found, len(report.imported), len(report.replaced)) == (5, 5, 1)
    assert [r.tape for r in report.replaced] == ["by-hand"]
    assert read_tapes(bub)["tape_name"].nunique() == 5


def test_a_replacing_import_that_fails_leaves_the_tape_as_it_was(tmp_path: Path) -> None:
    bub = tmp_path / "bub"
    sample = DATA / "codex" / CODEX_RUN
    first = import_log(sample, name="run", home=bub)
    broken = tmp_path / "broken.json"
    broken.write_text('{"schema_version": "ATIF-v1.6", "steps": [], "session_id": 1}\n{')  # not one document

    with pytest.raises(BubNbError):
        import_log(broken, "atif", name="run", home=bub, replace=True)

    assert len(open_tape("run", home=bub)) == first.entries and archive_files(bub / "tapes") == []
    again = import_log(sample, name="run", home=bub, replace=True)
    assert again.archived is not None and len(archive_files(bub / "tapes")) == 1
    assert len(open_tape("run", home=bub)) == first.entries
