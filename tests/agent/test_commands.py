"""Comma commands run the builtin tools on a real tape, log themselves there, and fail in one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bub_nb.agent.commands import CommandResult, is_command, parse_command, run_command
from bub_nb.agent.tools import ToolRegistry, tool
from bub_nb.errors import CommandError
from bub_nb.tape import MemoryTapeStore, Tape, open_tape


@pytest.fixture
def tape(tmp_path: Path) -> Tape:
    tape = open_tape("commands", home=tmp_path)
    tape.ensure_bootstrap_anchor()
    return tape


def command_events(tape: Tape) -> list[dict[str, Any]]:
    return [entry.payload["data"] for entry in tape.read(kinds=("event",)) if entry.name == "command"]


# -- parsing -----------------------------------------------------------------------------------


def test_a_command_is_a_prompt_starting_with_a_comma() -> None:
    assert is_command(",anchors")
    assert is_command("\n  ,tape.info\n")
    assert not is_command("what is ,anchors?")


def test_key_value_pairs_and_quoted_values_are_parsed_like_a_shell_line() -> None:
    parsed = parse_command(',handoff name=phase-1 summary="Setup done, tests pass" extra words')
    assert parsed.name == "handoff"
    assert dict(parsed.kwargs) == {"name": "phase-1", "summary": "Setup done, tests pass"}
    assert parsed.positional == ("extra", "words")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (',handoff summary="no end', r"Command ',handoff summary=\"no end' cannot be parsed: No closing quotation"),
        (",", "has no name"),
        (",  ", "has no name"),
        (",9lives", "Command name '9lives'"),
        (",handoff =phase", r"Argument '=phase' of ,handoff needs a name"),
        (",handoff na-me=x", r"Argument 'na-me=x' of ,handoff needs a name"),
        (",handoff name=a name=b", "Argument 'name' of ,handoff is given twice"),
        ("anchors", "'anchors' is not a command"),
    ],
)
def test_malformed_commands_raise_one_line_naming_the_problem(text: str, problem: str) -> None:
    with pytest.raises(CommandError, match=problem) as raised:
        parse_command(text)
    assert "\n" not in str(raised.value)


# -- running -----------------------------------------------------------------------------------


def test_handoff_writes_an_anchor_with_summary_and_next_steps(tape: Tape) -> None:
    result = run_command(tape, ',handoff name=phase-1 summary="Setup done" next_steps=Implementation')
    anchor = tape.find_anchor("phase-1")
    assert anchor.state == {"summary": "Setup done", "next_steps": "Implementation"}
    assert result.output.startswith("anchor added: phase-1")
    assert [entry.kind for entry in result.entries] == ["anchor", "event", "event"]
    assert result.entries[0].id == anchor.id


def test_bare_words_fill_the_parameters_in_order(tape: Tape) -> None:
    run_command(tape, ',tape.handoff phase-2 "schema designed"')
    assert tape.find_anchor("phase-2").state == {"summary": "schema designed"}


def test_too_many_bare_words_are_refused(tape: Tape) -> None:
    with pytest.raises(CommandError, match=r"Command ,tape\.info got more words than it has parameters: now"):
        run_command(tape, ",tape.info now")


def test_anchors_lists_phase_anchors_in_both_spellings(tape: Tape) -> None:
    tape.handoff("phase/db-done", {"tables": 5})
    tape.memory.save_long_term("prefers SQL")
    listed = run_command(tape, ",anchors").output
    assert listed == run_command(tape, ",tape.anchors").output
    assert listed.splitlines() == [
        '- session/start (#1) {"owner": "human"}',
        f'- phase/db-done (#{tape.find_anchor("phase/db-done").id}) {{"tables": 5}}',
    ]


def test_tape_info_reports_the_last_anchor(tape: Tape) -> None:
    tape.handoff("phase/a")
    assert "last anchor: phase/a" in run_command(tape, ",tape.info").output


def test_search_finds_entries_before_the_last_anchor(tape: Tape) -> None:
    tape.append_message({"role": "user", "content": "The parquet export is slow"})
    tape.handoff("phase/b")
    output = run_command(tape, ",tape.search query=PARQUET limit=5").output
    assert "message" in output
    assert "The parquet export is slow" in output


def test_reset_with_archive_starts_over_and_keeps_the_old_file(tape: Tape, tmp_path: Path) -> None:
    tape.append_message({"role": "user", "content": "before the reset"})
    result = run_command(tape, ",tape.reset archive=true")
    assert "archived at" in result.output
    assert list(tmp_path.glob("tapes/commands.jsonl.*.bak"))
    assert [entry.id for entry in tape.read()] == [entry.id for entry in result.entries]
    assert tape.read()[0].payload["name"] == "session/start"
    assert command_events(tape) == [{"name": "tape.reset", "args": {"archive": True}, "status": "ok"}]


def test_memory_shows_the_zone_and_memory_tools_work_as_commands(tape: Tape) -> None:
    run_command(tape, ',memory.save content="User prefers Python 3.12"')
    run_command(tape, ",memory.daily 'Reviewed the plots' date=2026-02-10")
    shown = run_command(tape, ",memory").output
    assert "long-term: User prefers Python 3.12" in shown
    assert "daily notes: 2026-02-10" in shown


def test_help_lists_every_command_with_its_parameters(tape: Tape) -> None:
    output = run_command(tape, ",help").output
    for line in (",handoff  same as ,tape.handoff", ",tape.search query=… [limit=…]", ",tape.reset [archive=…]"):
        assert line in output


def test_every_command_is_logged_with_name_args_and_status(tape: Tape) -> None:
    run_command(tape, ",tape.search query=x limit=3")
    run_command(tape, ",help")
    assert command_events(tape) == [
        {"name": "tape.search", "args": {"query": "x", "limit": 3}, "status": "ok"},
        {"name": "help", "args": {}, "status": "ok"},
    ]


def test_an_unknown_command_lists_the_known_ones_and_writes_nothing(tape: Tape) -> None:
    before = len(tape)
    with pytest.raises(CommandError, match=r"^Unknown command ',compact'; known commands: ,help, ,handoff, ,anchors"):
        run_command(tape, ",compact now level=2")
    assert len(tape) == before


def test_arguments_that_do_not_fit_the_tool_are_refused_before_anything_is_written(tape: Tape) -> None:
    before = len(tape)
    with pytest.raises(CommandError, match=r"Tool 'tape\.search' got invalid limit: 'many' is not of type 'integer'"):
        run_command(tape, ",tape.search query=x limit=many")
    with pytest.raises(CommandError, match="Date '2026-13-01' is not a YYYY-MM-DD day"):
        run_command(tape, ",memory.daily note date=2026-13-01")
    with pytest.raises(CommandError, match="takes no arguments"):
        run_command(tape, ",help me")
    assert len(tape) == before


def test_a_tool_that_fails_after_starting_is_logged_as_an_error(tape: Tape) -> None:
    @tool(name="course.fail")
    def fail() -> str:
        raise RuntimeError("disk full")

    with pytest.raises(CommandError, match="disk full"):
        run_command(tape, ",course.fail", ToolRegistry([fail]))
    assert [event["status"] for event in command_events(tape)] == ["error"]


def test_handoff_commands_refuse_memory_names_and_write_nothing(tape: Tape) -> None:
    before = len(tape)
    for line in (",handoff memory/seal summary=forged", ",tape.handoff name=Memory/open", ",handoff memory/notes"):
        with pytest.raises(CommandError, match=r"reserved: names starting with 'memory/' belong to the memory zone"):
            run_command(tape, line)
    assert len(tape) == before


def test_commands_run_the_registry_they_are_given(tape: Tape) -> None:
    @tool(name="course.grade")
    def grade(student: str, points: int) -> str:
        return f"{student}: {points}/10"

    result = run_command(tape, ",course.grade ada 9", ToolRegistry([grade]))
    assert (result.name, result.output) == ("course.grade", "ada: 9/10")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=60))
def test_any_text_after_a_comma_is_a_result_or_a_command_error(text: str) -> None:
    tape = open_tape("fuzz", store=MemoryTapeStore())
    try:
        result = run_command(tape, "," + text)
    except CommandError as exc:
        assert str(exc) and "\n" not in str(exc)
    else:
        assert isinstance(result, CommandResult)
        assert result.entries[-1].name == "command"


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(["handoff", "anchors", "tape.info", "tape.search", "tape.reset", "memory", "memory.daily", "x"]),
    st.lists(
        st.tuples(st.sampled_from(["name", "summary", "query", "limit", "archive", "date", "days", "k"]), st.text()),
        max_size=3,
    ),
)
def test_known_commands_with_any_values_give_a_result_or_a_command_error(
    name: str, pairs: list[tuple[str, str]]
) -> None:
    import shlex

    tape = open_tape("fuzz", store=MemoryTapeStore())
    text = "," + " ".join([name, *(shlex.quote(f"{key}={value}") for key, value in pairs)])
    try:
        result = run_command(tape, text)
    except CommandError as exc:
        assert str(exc) and "\n" not in str(exc)
    else:
        assert isinstance(result, CommandResult)
