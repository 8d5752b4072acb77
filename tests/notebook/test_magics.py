"""The magics on a real IPython InteractiveShell whose cells re-raise their errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from harness.shell import Notebook
from IPython.core.error import UsageError

from bub_nb.tape import TapeInfo


def kinds(tape: Any) -> list[str]:
    return [entry.kind for entry in tape.read()]


def test_load_ext_registers_one_configurable_magics_instance(nb: Notebook) -> None:
    magics = nb.magics
    assert {"bub", "handoff", "anchors", "context", "memory", "tape"} <= set(nb.shell.magics_manager.magics["line"])
    assert "bub" in nb.shell.magics_manager.magics["cell"]
    nb.run('%config BubMagics.model = "openai:gpt-4o-mini"')
    nb.run("%config BubMagics.max_steps = 3")
    assert (magics.model, magics.max_steps) == ("openai:gpt-4o-mini", 3)
    assert magics.model == nb.run("%config BubMagics.model")


def test_environment_variables_seed_the_trait_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("BUB_MODEL", "offline")
    monkeypatch.setenv("BUB_CONTEXT", "window:6")
    monkeypatch.setenv("BUB_MAX_STEPS", "5")
    monkeypatch.setenv("BUB_HOME", str(tmp_path))
    from bub_nb.notebook.magics import BubMagics

    magics = BubMagics(shell=None)
    assert (magics.model, magics.context, magics.max_steps, magics.home) == ("offline", "window:6", 5, str(tmp_path))


def test_magics_print_real_help(nb: Notebook) -> None:
    for name in ("bub", "handoff", "anchors", "context", "memory", "tape"):
        doc = nb.shell.find_line_magic(name).__doc__
        assert f"%{name} " in doc and ("options:" in doc or "positional arguments:" in doc), name
    assert "--context" in nb.shell.find_cell_magic("bub").__doc__


def test_a_new_user_walks_through_the_lesson_offline(nb: Notebook, capsys: pytest.CaptureFixture[str]) -> None:
    nb.run("%%bub\nHello! What can you see?")
    first = capsys.readouterr().out
    assert "offline teaching model" in first and "Hello! What can you see?" in first

    nb.run("%handoff lesson/1 summary='We said hello' next_steps='Ask about phases'")
    assert "lesson/1" in nb.shown() and "We said hello" in nb.shown()

    nb.run("%%bub\nWhere does your view start?")
    second = capsys.readouterr().out
    assert "lesson/1" in second and "We said hello" in second

    anchors = nb.run("%anchors")
    assert isinstance(anchors, pd.DataFrame)
    assert {"name", "id", "date", "state", "entries_since"} <= set(anchors.columns)
    assert anchors["name"].iloc[-1] == "lesson/1"
    assert anchors["state"].iloc[-1]["summary"] == "We said hello"

    nb.run("%context")
    nb.run("%memory")
    info = nb.run("%tape info")
    assert isinstance(info, TapeInfo)
    assert info.last_anchor == "lesson/1" and info.entries == len(nb.tape.read())


def test_bub_cell_writes_the_turn_and_puts_entry_ids_in_metadata(nb: Notebook) -> None:
    nb.run("%%bub --no-stream\nFirst question")
    turn = nb.magics.session.last_turn
    entries = nb.tape.read()
    assert [e.kind for e in turn.entries] == ["system", "message", "message", "event"]
    assert turn.entries[1].payload == {"role": "user", "content": "First question"}
    assert turn.entries[1].meta["cell"] == nb.execution_count and turn.entries[1].meta["source"] == "notebook"
    assert entries[-1].payload["name"] == "run" and entries[-1].payload["data"]["status"] == "ok"


def test_output_variable_and_safe_interpolation(nb: Notebook) -> None:
    nb.run("class Box:\n    size = 41\nbox = Box()\nitems = ['first', 'second']\nname = 'Ada'")
    nb.run("%%bub -o answer\nHi, I am {name}; size {box.size}, item {items[1]}, literal {{braces}}")
    user = [e for e in nb.tape.read() if e.kind == "message" and e.payload["role"] == "user"][-1]
    assert user.payload["content"] == "Hi, I am Ada; size 41, item second, literal {braces}"
    assert "offline teaching model" in nb.shell.user_ns["answer"]


def test_undefined_placeholder_is_a_usage_error_naming_it(nb: Notebook) -> None:
    with pytest.raises(UsageError, match="nowhere"):
        nb.run("%%bub\nTell me about {nowhere}")
    with pytest.raises(UsageError, match="_secret"):
        nb.run("x = 1\n")
        nb.run("%%bub\n{x.__class__._secret}")
    assert not nb.tape.read()  # nothing reached the tape


def test_comma_command_cell_never_reaches_the_model(nb: Notebook, capsys: pytest.CaptureFixture[str]) -> None:
    nb.run("%%bub\n,handoff name=phase/one summary='done with setup'")
    nb.run("%%bub\n,tape.info")
    out = capsys.readouterr().out
    assert "last anchor: phase/one" in out
    assert "system" not in kinds(nb.tape)  # no model turn happened
    commands = [e for e in nb.tape.read() if e.kind == "event" and e.payload["name"] == "command"]
    assert [c.payload["data"]["name"] for c in commands] == ["tape.handoff", "tape.info"]
    assert commands[-1].meta == {"cell": nb.execution_count, "source": "notebook"}


def test_handoff_reads_pairs_as_json_over_a_state_object(nb: Notebook) -> None:
    nb.run("""%handoff phase/x --state '{"summary": "base", "tables": 1}' tables=5 done=true note='two words'""")
    anchor = nb.tape.find_anchor("phase/x")
    assert anchor.state == {"summary": "base", "tables": 5, "done": True, "note": "two words"}
    assert nb.tape.view().messages[0]["content"].startswith("[Anchor created: phase/x]")


def test_memory_actions_work_on_the_zone(nb: Notebook) -> None:
    nb.run("%memory save Prefers pandas over polars")
    nb.run("%memory daily --date 2026-02-10 Wrote the lesson plan")
    snapshot = nb.tape.memory.read()
    assert snapshot.long_term == "Prefers pandas over polars"
    assert snapshot.daily("2026-02-10") and "lesson plan" in snapshot.daily("2026-02-10")
    nb.run("%memory clear")
    assert nb.tape.memory.read().long_term == ""
    assert "Long-term memory saved" in nb.shown()


def test_tape_subcommands(nb: Notebook, tmp_path: Path) -> None:
    nb.run("%%bub\nfind the needle please")
    frame = nb.run("%tape df")
    assert list(frame["id"]) == [e.id for e in nb.tape.read()]
    hits = nb.run("%tape search needle")
    assert len(hits) >= 1 and hits["id"].is_monotonic_decreasing

    nb.run(f"%tape export md {tmp_path / 'session.md'}")
    transcript = (tmp_path / "session.md").read_text()
    assert "## Anchor session/start" in transcript and "find the needle please" in transcript
    nb.run(f"%tape export jsonl {tmp_path / 'copy.jsonl'}")
    recorded = nb.tape.read()[-1]  # the export is recorded, with its path, after what it copied
    assert recorded.name == "export" and recorded.payload["data"] == {
        "path": str(tmp_path / "copy.jsonl"),
        "format": "jsonl",
    }
    assert len((tmp_path / "copy.jsonl").read_text().splitlines()) == len(nb.tape.read()) - 1

    original = nb.tape.name
    nb.run("%handoff branch/point summary='fork here'")
    nb.run("%tape fork side-quest --from branch/point")
    assert nb.tape.name == "side-quest" and nb.tape.anchors(limit=None)[-1].name == "branch/point"
    nb.run(f"%tape use {original}")
    assert nb.tape.name == original

    before = len(nb.tape.read())
    nb.run("%tape reset --archive")
    state = nb.tape.read()[0].payload["state"]
    assert len(Path(state["archived"]).read_text(encoding="utf-8").splitlines()) == before
    assert len(nb.tape.read()) == 2 and before > 2


def test_record_on_writes_executed_cells_with_error_summaries(nb: Notebook) -> None:
    nb.run("%tape record on")
    nb.run("total = 6 * 7")
    with pytest.raises(ZeroDivisionError):
        nb.run("1 / 0")
    nb.run("%tape record off")
    nb.run("after = 1")
    cells = [e.payload["data"] for e in nb.tape.read() if e.kind == "event" and e.payload["name"] == "notebook.cell"]
    assert [c["source"] for c in cells] == ["total = 6 * 7", "1 / 0"]
    assert cells[1]["error"].startswith("ZeroDivisionError")
    assert nb.shell.custom_exceptions == ()  # no exception handler was installed


BAD_LINES = [
    "%handoff",
    "%handoff x --state '{bad'",
    "%handoff x --state '[1, 2]'",
    "%handoff x notapair",
    "%handoff x 'unterminated",
    "%tape",
    "%tape bogus",
    "%tape info extra",
    "%tape use",
    "%tape use a b",
    "%tape use ../escape",
    "%tape record maybe",
    "%tape export",
    "%tape fork",
    "%tape fork bad/name",
    "%tape search",
    "%memory save",
    "%memory nonsense",
    "%memory show extra words",
    "%context window:abc",
    "%context no-such-anchor",
    "%anchors --limit many",
    "%bub",
    "%%bub --context window:0\nhi",
    "%%bub -m bogus:model\nhi",
    "%%bub --tools no_such_tool\nhi",
    "%%bub -o 1bad\nhi",
    "%%bub extra words\nhi",
    "%%bub\n{undefined}",
    "%%bub\n,tape.search",
    "%%bub\n,handoff 'open",
]


@pytest.mark.parametrize("line", BAD_LINES)
def test_every_malformed_line_is_a_one_line_usage_error(nb: Notebook, line: str) -> None:
    with pytest.raises(UsageError) as caught:
        nb.run(line)
    assert "\n" not in str(caught.value).strip()


def test_a_notebook_function_becomes_a_tool(nb: Notebook) -> None:
    nb.run(
        "def add(a: int, b: int) -> int:\n"
        '    """Add two numbers.\n\n    Args:\n        a: first\n        b: second\n    """\n'
        "    return a + b\n"
    )
    agent = nb.magics.session.agent(tools="add,memory.*")
    assert sorted(agent.tools.names) == sorted(["add", "memory.save", "memory.daily", "memory.recall",
                                                "memory.show", "memory.clear"])  # fmt: skip


def test_interrupt_keeps_the_partial_answer(nb: Notebook, monkeypatch: pytest.MonkeyPatch) -> None:
    from bub_nb.notebook import display

    original = display.AnswerDisplay.add
    seen: list[str] = []

    def interrupt_after_two(self: Any, delta: str) -> None:
        seen.append(delta)
        original(self, delta)
        if len(seen) == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(display.AnswerDisplay, "add", interrupt_after_two)
    with pytest.raises(KeyboardInterrupt):  # goes on, like any interrupted Python cell
        nb.run("%%bub\nTell me a long story")
    entries = nb.tape.read()
    partial = [e for e in entries if e.kind == "message" and e.meta.get("partial")]
    assert len(partial) == 1 and partial[0].payload["content"] == "".join(seen)
    run = entries[-1]
    assert run.payload["name"] == "run" and run.payload["data"]["status"] == "interrupted"


def test_an_interrupted_streaming_cell_closes_its_turn_at_once(openai_server: Any, tmp_path: Path) -> None:
    # In a fresh interpreter, so that whatever the cell left open shows when the interpreter exits.
    script = f"""
import os
os.environ.update(BUB_HOME={str(tmp_path / "home")!r}, BUB_API_BASE={openai_server.base_url!r}, BUB_API_KEY="k")
os.chdir({str(tmp_path)!r})
from IPython.core.interactiveshell import InteractiveShell
from bub_nb.notebook import display

shell = InteractiveShell.instance()
shell.run_cell("%load_ext bub_nb").raise_error()
original, seen = display.AnswerDisplay.add, []

def interrupt_after_two(self, delta):
    seen.append(delta)
    original(self, delta)
    if len(seen) == 2:
        raise KeyboardInterrupt

display.AnswerDisplay.add = interrupt_after_two
result = shell.run_cell("%%bub -m openai:test-model\\nTell me a long story")
assert isinstance(result.error_in_exec, KeyboardInterrupt)
magics = next(c for c in shell.configurables if type(c).__name__ == "BubMagics")
print(magics.session.tape.read()[-1].payload["data"]["status"], "".join(seen))
"""
    openai_server.reply(" ".join(f"word{n}" for n in range(40)))
    env = {name: value for name, value in os.environ.items() if name != "JPY_SESSION_NAME"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=env)

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "interrupted word0 word1 "
    assert done.stderr == ""  # nothing was left for the interpreter's exit to close


def test_a_real_endpoint_streams_into_the_cell(nb: Notebook, openai_server: Any, monkeypatch, capsys) -> None:
    monkeypatch.setenv("BUB_API_BASE", openai_server.base_url)
    monkeypatch.setenv("BUB_API_KEY", "test-key-not-secret")
    openai_server.reply("Hello from the endpoint, streamed in pieces.")
    nb.run("%%bub -m openai:test-model\nSay hello")
    assert "Hello from the endpoint, streamed in pieces." in capsys.readouterr().out
    request = openai_server.last_request
    assert request["stream"] is True and request["messages"][-1] == {"role": "user", "content": "Say hello"}


def test_an_endpoint_failure_is_one_line_and_keeps_the_prompt(nb: Notebook, openai_server: Any, monkeypatch) -> None:
    monkeypatch.setenv("BUB_API_BASE", openai_server.base_url)
    monkeypatch.setenv("BUB_API_KEY", "test-key-not-secret")
    for _ in range(5):
        openai_server.fail(500)
    from bub_nb.agent.models import OpenAIModel

    nb.shell.user_ns["endpoint"] = OpenAIModel(
        "test-model", api_key="test-key-not-secret", base_url=openai_server.base_url, max_retries=0
    )
    with pytest.raises(UsageError, match="500"):
        nb.run("%%bub -m endpoint\nKeep this prompt")
    entries = nb.tape.read()
    assert any(e.kind == "message" and e.payload.get("content") == "Keep this prompt" for e in entries)
    assert any(e.kind == "error" for e in entries)
    assert entries[-1].payload["data"]["status"] == "error"


def test_notebook_context_shows_the_model_recent_cells(nb: Notebook) -> None:
    nb.run("%tape record on")
    nb.run("frame_rows = 3 + 4")
    with pytest.raises(NameError):
        nb.run("undefined_thing + 1")
    nb.run("%%bub --context notebook\nWhat did I just run?")
    request = nb.magics.session.last_turn.view.messages
    cells = [m["content"] for m in request if m["role"] == "user" and m["content"].startswith("[Notebook cell")]
    assert len(cells) == 2 and "frame_rows = 3 + 4" in cells[0] and "NameError" in cells[1]


def test_a_model_object_in_the_notebook_can_be_chosen_by_name(nb: Notebook) -> None:
    nb.run("from bub_nb.agent.models import ScriptedModel\nscripted = ScriptedModel(['Scripted hello'])")
    nb.run("%%bub -m scripted -o said\nhi")
    assert nb.shell.user_ns["said"] == "Scripted hello"
    assert nb.tape.read()[-1].payload["data"]["model"] == "scripted"


def test_memory_saved_before_the_first_turn_still_leaves_a_phase(nb: Notebook) -> None:
    nb.run("%memory save Prefers pandas")
    nb.run("%%bub\nHello")
    turn = nb.magics.session.last_turn
    assert turn.view is not None and turn.view.anchor is not None and turn.view.anchor.name == "session/start"


def test_usage_errors_converts_bub_nb_errors_and_lets_a_bug_keep_its_traceback() -> None:
    from bub_nb.errors import TapeNameError
    from bub_nb.notebook.usage_errors import usage_errors

    @usage_errors
    def refused() -> None:
        raise TapeNameError("Tape name 'a/b' has a path separator")

    @usage_errors
    def broken() -> None:
        int("not a number")  # a ValueError no one raised on purpose

    with pytest.raises(UsageError, match=r"^Tape name 'a/b' has a path separator$"):
        refused()
    with pytest.raises(ValueError, match="invalid literal") as raised:
        broken()
    assert not isinstance(raised.value, UsageError) and raised.value.__traceback__ is not None


def test_context_phases_sends_each_earlier_summary_and_anchors_list_what_they_cite(nb: Notebook) -> None:
    nb.run("%%bub -m offline\nWhat is a tape?")
    asked = next(e.id for e in nb.tape.read() if e.kind == "message" and e.payload.get("role") == "user")
    summary = f"The user asked what a tape is [#{asked}]. It was explained."
    state = {
        "summary": summary,
        "sources": [asked],
        "uncited": ["It was explained."],
        "range": [asked, nb.tape.last_id],
    }
    nb.run(f"%handoff phase/1 --state '{json.dumps(state)}'")
    nb.run("%%bub -m offline\nAnd an anchor?")
    nb.run("%handoff phase/2 topic=anchors")
    nb.run("%%bub -m offline --context phases\nWhere are we?")
    view = nb.magics.session.last_turn.view
    assert view.mode == "phases"
    earlier = [m["content"] for m in view.messages if m["content"].startswith("[Earlier phase:")]
    assert [c.splitlines()[0].split(" (")[0] for c in earlier] == [
        "[Earlier phase: session/start",
        "[Earlier phase: phase/1",
    ]
    assert f": {summary}" in earlier[1]

    frame = nb.run("%anchors").set_index("name")
    assert frame.loc["phase/1", "sources"] == [asked] and frame.loc["phase/1", "uncited"] == 1
    assert frame.loc["phase/2", "sources"] == [] and pd.isna(frame.loc["phase/2", "uncited"])
    nb.refused("%%bub -m offline --context phasez\nhi", "phasez")


def test_reset_archive_on_a_tape_without_entries_says_there_was_nothing_to_archive(nb: Notebook) -> None:
    nb.run("%tape use empty-one --new")
    nb.run("%tape reset --archive")
    assert "held no entries, so there was nothing to archive" in nb.shown()
    assert "were discarded" not in nb.shown()


def test_a_handoff_cell_run_again_says_the_tape_already_held_that_anchor(nb: Notebook) -> None:
    nb.run("%handoff lesson/1 summary='first'")
    assert "already held" not in nb.shown()
    first = nb.tape.find_anchor("lesson/1").id
    nb.run("%handoff lesson/1 summary='first'")
    assert f"The tape already held an anchor **lesson/1** (#{first})" in nb.shown()


def test_confirmations_in_cells_use_no_character_that_needs_an_emoji_font(nb: Notebook) -> None:
    nb.run("%memory save Prefers pandas")
    nb.run("%tape use other --new")
    nb.run("%tape reset")
    nb.run("%tape fork other-side")
    shown = nb.shown()
    assert "Forked" in shown and "Now on tape" in shown and "Long-term memory saved" in shown
    assert not [char for char in shown if ord(char) >= 0x1F000], "an emoji font is needed to read this"


def test_lesson_start_gives_a_clean_tape_of_that_name_each_time_and_archives_the_last_run(nb: Notebook) -> None:
    nb.run("%lesson start trip")
    nb.run("%handoff lesson/1 summary='first run'")
    nb.run("%tape fork trip-side")
    nb.run("%lesson start trip")
    assert nb.tape.name == "trip" and len(nb.tape) == 0
    assert "Lesson `trip` starts on a clean tape `trip`" in nb.shown()
    tapes = nb.tape.base_store.list_tapes()
    assert "trip-side" not in tapes  # its forks are archived with it, so their names are free again
    for line in ("%lesson", "%lesson begin trip", "%lesson start a b"):
        with pytest.raises(UsageError, match="%lesson start NAME"):
            nb.run(line)


def test_tape_search_says_when_it_cut_its_results_and_finds_all_on_request(
    nb: Notebook, capsys: pytest.CaptureFixture[str]
) -> None:
    nb.tape.handoff("phase/first")
    for number in range(5):
        nb.tape.append_message({"role": "user", "content": f"needle {number}"})
    nb.tape.handoff("phase/later")
    hits = nb.run("%tape search needle --limit 2")
    assert (
        hits["content"].tolist() == ["needle 4", "needle 3"]
        and "The 2 newest matches; more entries match" in capsys.readouterr().out
    )
    every = nb.run("%tape search needle --all")
    assert len(every) == 5 and "more entries match" not in capsys.readouterr().out
    whole = nb.tape.to_frame().set_index("id")
    assert every["phase_id"].tolist() == whole.loc[every["id"], "phase_id"].tolist()
    assert set(every["phase"]) == {"phase/first"}  # where the needles are, not where the search ran
    assert set(every["tape_name"]) == {nb.tape.name}
