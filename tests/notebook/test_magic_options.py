"""Every magic option has one source: the %tape registry, the %bub parser, the agent options, the settings."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from harness.shell import Notebook
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from bub_nb.notebook.commands.lesson import LESSON
from bub_nb.notebook.commands.mcp import MCP
from bub_nb.notebook.commands.registry import Subcommands
from bub_nb.notebook.commands.tape import SUBCOMMANDS, TAPE
from bub_nb.notebook.parsing.magic_line import split_line_prompt, takes_value


def user_messages(nb: Notebook) -> list[str]:
    return [e.payload["content"] for e in nb.tape.read() if e.kind == "message" and e.payload["role"] == "user"]


def test_every_option_of_bub_that_takes_a_value_is_read_from_its_parser(nb: Notebook) -> None:
    parser = nb.shell.find_line_magic("bub").parser
    valued = {option for action in parser._actions for option in action.option_strings if action.nargs != 0}
    assert valued == {"-m", "--model", "--context", "-o", "--output", "--tools", "--budget", "--agent"}
    for option in valued:
        assert split_line_prompt(f"{option} 7 the prompt", parser) == ([option, "7"], "the prompt")
    assert takes_value(parser, "--bud") and not takes_value(parser, "--no-s") and not takes_value(parser, "--budget=5")


def test_the_line_form_takes_budget_and_every_spelling_of_an_option(nb: Notebook) -> None:
    nb.run("%bub --budget 5000 hello")
    nb.run("%bub --bud 5000 -o said again")
    nb.run("%bub --budget=5000 --no-stream third")
    assert user_messages(nb) == ["hello", "again", "third"]
    assert "offline teaching model" in nb.shell.user_ns["said"]
    nb.refused("%bub --budget five hello", "argument --budget: invalid int value: 'five'")


def test_a_question_on_a_bub_line_reaches_the_model_as_typed(nb: Notebook, capsys: pytest.CaptureFixture[str]) -> None:
    nb.run("%bub what is a tape?")
    nb.run("%bub -m offline is it append-only??")
    nb.run("for _ in range(1):\n    %bub asked in a loop?\n")
    nb.run("x = 5 % 3  # not a magic?")
    assert user_messages(nb) == ["what is a tape?", "is it append-only??", "asked in a loop?"]
    capsys.readouterr()
    before = len(nb.tape)
    nb.run("%bub?")  # alone, IPython's help as always
    assert "Run one agent turn on this notebook's tape" in capsys.readouterr().out
    nb.run("%bub??")
    assert len(nb.tape) == before


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    text=st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), min_size=1),
    marks=st.sampled_from(["?", "??"]),
)
@example(text="what's a (tape", marks="?")
@example(text='json {"a": 1} # and $x', marks="??")
@example(text='"""unclosed', marks="?")
def test_any_question_on_a_bub_line_is_the_magic_s_argument_as_typed(nb: Notebook, text: str, marks: str) -> None:
    text = text.strip()
    assume(text.strip("?").strip() and not text.endswith("\\"))  # "%bub ??" asks nothing; "\\" continues the line
    code = nb.shell.transform_cell(f"%bub {text}{marks}")
    assert code == f"get_ipython().run_line_magic('bub', {text + marks!r})\n"


def test_tape_help_lists_each_subcommand_from_the_registry(nb: Notebook) -> None:
    doc = nb.shell.find_line_magic("tape").__doc__
    for name, command in SUBCOMMANDS.items():
        assert f"%tape {name}" in doc and command.parser.description in doc
    assert "--limit N" in doc and "--from ANCHOR" in doc and "{on,off}" in doc
    assert list(SUBCOMMANDS) == [
        "info",
        "df",
        "search",
        "reset",
        "fork",
        "replay",
        "export",
        "use",
        "record",
        "retract",
        "unretract",
        "attach",
        "continue",
    ]


@pytest.mark.parametrize("registry", [TAPE, MCP, LESSON], ids=lambda registry: registry.magic)
def test_each_magic_with_subcommands_is_documented_and_refused_from_its_one_registry(
    nb: Notebook, registry: Subcommands
) -> None:
    doc = nb.shell.find_line_magic(registry.magic).__doc__
    for command in registry.commands.values():
        assert command.usage in doc and command.parser.description in doc
    nb.refused(f"%{registry.magic} no-such-subcommand", f"use one of: .*{list(registry.commands)[-1]}")
    if registry.default is None:
        nb.refused(f"%{registry.magic}", f"%{registry.magic} needs a subcommand")


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("%tape", "needs a subcommand: info, df, search, reset, fork, replay, export, use, record"),
        ("%tape rewind", "Unknown %tape subcommand 'rewind'; use one of: info, df"),
        ("%tape info now", "unrecognized arguments: now"),
        ("%tape search --limit many foo", "argument --limit: invalid int value: 'many'"),
        ("%tape record maybe", "argument switch: invalid choice: 'maybe'"),
        ("%tape use", "the following arguments are required: NAME|PATH"),
        ("%tape export jsonl", "%tape export jsonl needs the PATH to write, e.g. %tape export jsonl tape.jsonl"),
        ("%tape export md", "%tape export md needs the PATH to write"),
    ],
)
def test_each_subcommand_parses_with_its_own_parser(nb: Notebook, line: str, words: str) -> None:
    nb.run("%bub hello")
    nb.refused(line, words)


def test_export_jsonl_without_a_path_writes_no_file(nb: Notebook, tmp_path: Path) -> None:
    nb.run("%bub hello")
    nb.refused("%tape export jsonl", "needs the PATH")
    assert not (tmp_path / "jsonl").exists()
    nb.run("%tape search --limit 1 hello")


def test_memory_clear_and_prune_refuse_extra_words(nb: Notebook) -> None:
    nb.run("%memory save Prefers tea")
    nb.refused("%memory clear extra words", "%memory clear takes no text, got 'extra words'")
    nb.refused("%memory prune old ones", "%memory prune takes no text")
    assert "Prefers tea" in nb.tape.memory.read().long_term


def test_replay_runs_with_the_options_bub_runs_with(nb: Notebook) -> None:
    nb.run('%config BubMagics.system_prompt = "Answer like a pirate"')
    nb.run('%config BubMagics.tools = ["tape.info"]')
    nb.run("%bub hello")
    options = nb.magics.session.agent_options()
    assert (options.instructions, options.builtin_tools) == ("Answer like a pirate", ["tape.info"])
    frame = nb.run("%tape replay -m offline")
    fork = nb.magics.session.open(frame.attrs["fork"], create=False)
    assert fork.read(kinds=("system",))[-1].payload["content"].endswith("Answer like a pirate")
    answer = [e for e in fork.read(kinds=("message",)) if e.payload["role"] == "assistant"][-1]
    assert "Tools offered: `tape_info`." in answer.payload["content"]


def test_replay_of_an_opened_archive_makes_a_fork_with_a_plain_name(nb: Notebook) -> None:
    nb.run("%bub hello")
    archived = nb.tape.reset(archive=True)[0].payload["state"]["archived"]
    nb.run(f"%tape use {Path(archived).name}")
    frame = nb.run("%tape replay -m offline")
    stamp = Path(archived).name.split(".")[2]
    assert frame.attrs["fork"] == f"{nb.tape.name.split('.')[0]}-{stamp}__replay__offline"
    assert frame["prompt"].tolist() == ["hello"]


def test_a_refused_config_value_does_not_configure_logging(nb: Notebook, monkeypatch: Any, capsys: Any) -> None:
    monkeypatch.setattr(logging.root, "handlers", [])  # a kernel's root logger has none
    nb.run("%config BubMagics.budget = -1")
    nb.run("%config BubMagics.max_steps = 'many'")
    assert logging.root.handlers == []  # so a later failed turn logs nothing into its cell
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "BubMagics.budget must be 0 (no budget) or a number of tokens, got -1"
    assert "'max_steps' trait of a BubMagics instance expected an int" in err[1] and len(err) == 2


def test_reload_ext_keeps_recording_cells(nb: Notebook) -> None:
    nb.run("%tape record on")
    nb.run("%reload_ext bub_nb")
    nb.run("after_reload = 1")
    cells = [e.payload["data"]["source"] for e in nb.tape.read() if e.name == "notebook.cell"]
    assert cells == ["%reload_ext bub_nb", "after_reload = 1"]
    nb.run("%tape record off")
    nb.run("%reload_ext bub_nb")
    nb.run("not_recorded = 1")
    assert [e.payload["data"]["source"] for e in nb.tape.read() if e.name == "notebook.cell"] == cells


def test_recording_on_a_tape_that_cannot_take_it_is_refused_and_stays_off(nb: Notebook, capsys: Any) -> None:
    nb.run("%bub hello")
    archived = nb.tape.reset(archive=True)[0].payload["state"]["archived"]
    nb.run(f"%tape use {Path(archived).name}")
    nb.refused("%tape record on", "opens read-only; cells cannot be recorded on it")
    nb.run("%config BubMagics.record = True")
    assert "cells cannot be recorded on it" in capsys.readouterr().err
    assert not nb.magics.record and not nb.magics.recorder.active
    nb.run("%tape use --new elsewhere")
    nb.run("%tape record on")
    nb.run(f"%tape use {Path(archived).name}")
    capsys.readouterr()
    nb.run("x = 1")  # recording waits while the archive is open
    assert "Error in callback" not in capsys.readouterr().err
