"""Every example notebook runs top to bottom in a real kernel on the offline model, and shows what it teaches.

Each notebook runs in its own kernel, on a copy of ``examples/`` under ``tmp_path`` with its own Bub home,
so the notebooks can run in parallel with each other and with the rest of the suite.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import nbformat
import pytest
from harness.notebooks import (  # noqa: F401
    CELL_TIMEOUT,
    EXAMPLES,
    NOTEBOOKS,
    Executed,
    comparable,
    execute,
    shown_outputs,
    shown_text,
)

from bub_nb import diff_views
from bub_nb.context.diff import spans
from bub_nb.tape import open_tape

# -- what each notebook must show ---------------------------------------------------------------------


def check_quickstart(run: Executed) -> None:
    answers = [output for output in run.outputs("%%bub") if output.output_type == "display_data"]
    assert len(answers) == 3
    for answer in answers:
        meta = answer.metadata["bub_nb"]
        assert set(meta) == {"tape", "entry_ids", "anchor"} and meta["tape"] == run.tape.name
        written = {entry.id for entry in run.tape.read()}
        assert meta["entry_ids"] and set(meta["entry_ids"]) <= written
    second = answers[1]
    assert second.metadata["bub_nb"]["anchor"] == "lesson/1"
    assert "lesson/1" in second.data["text/plain"] and "We said hello" in second.data["text/plain"]
    assert run.tape.memory.read().long_term == "I prefer short answers with one example"
    commands = [entry.payload["data"] for entry in run.entries("event", "command")]
    assert [(c["name"], c["status"]) for c in commands] == [("tape.anchors", "ok")]  # the `,anchors` cell
    assert "lesson/1" in run.text(",anchors")
    assert run.tape.find_anchor("lesson/1").state == {
        "summary": "We said hello and looked at the context",
        "next_steps": "Ask where the view starts",
    }
    # Against the full tape, the view from lesson/1 leaves exactly what was sent before the handoff.
    lesson = run.tape.find_anchor("lesson/1").id
    full = run.tape.view(None)
    left = diff_views(full, run.tape.view()).left
    assert left and left == tuple(entry_id for entry_id in full.entry_ids if entry_id < lesson)
    shown = run.text("%context --diff full last")
    assert "Context diff full → last-anchor" in shown and f"left     {len(left):>4}  {spans(left)}" in shown


def check_context_and_handoff(run: Executed) -> None:
    overflow = run.tape.find_anchor("auto_handoff/context_overflow")
    assert overflow.state is not None and overflow.state["reason"] == "context_length_exceeded"
    after = run.tape.read(overflow.id)
    step = next(entry for entry in after if entry.name == "loop.step")
    assert step.payload["data"]["status"] == "auto_handoff"
    retry = next(entry for entry in after if entry.kind == "message" and entry.meta.get("retry"))
    assert retry.payload == {"role": "user", "content": "Summarize where we are."}
    run_event = next(entry for entry in after if entry.name == "run")
    assert run_event.name == "run" and run_event.payload["data"]["status"] == "ok"
    assert "starts at anchor `auto_handoff/context_overflow`" in run.text("%%bub -m small")
    # The retry carried a summary of the phase that overflowed, citing only that phase.
    first, last = overflow.state["range"]
    assert overflow.state["summary"] and overflow.state["sources"]
    # Within the phase, or earlier: a line carried over from an earlier summary keeps its original entry's id.
    assert all(entry_id <= last < overflow.id for entry_id in overflow.state["sources"])
    assert any(first <= entry_id for entry_id in overflow.state["sources"])
    carried = run.text("from bub_nb.context import build_view\n\nretry_first")
    assert "[Anchor created: auto_handoff/context_overflow]" in carried
    assert json.dumps(overflow.state["summary"], ensure_ascii=False) in carried
    closed = run.tape.find_anchor("phase/comparison").state
    assert closed["summarized_by"] == "offline" and closed["sources"] and closed["removed_citations"] == 0
    assert all(entry_id <= closed["range"][1] for entry_id in closed["sources"])
    assert any(closed["range"][0] <= entry_id for entry_id in closed["sources"])
    assert closed["range"][0] == overflow.id
    # The handoff cut the view, not the tape: every user message is still there.
    users = [entry.payload["content"] for entry in run.entries("message") if entry.payload["role"] == "user"]
    assert users[:2] == [
        "We loaded the sales data: three CSV files, 12,000 rows in total.",
        'The region column had typos ("Nort", "north "); we normalised them with a mapping.',
    ]
    table = "".join(output.data["text/html"] for output in run.outputs("frame = tape.to_frame()"))
    assert all(label in table for label in ("last anchor", "session/start", "full tape", "window:4"))
    assert "View [last-anchor] from anchor 'phase/analysis'" in run.text("print(views")
    # What a summary kept, and a preview that wrote nothing until it was accepted, once, as shown.
    assert "Preview of handoff **phase/plotted**" in run.text("entries_before = len(tape)")
    assert [anchor.name for anchor in run.tape.anchors(limit=None)].count("phase/plotted") == 1
    plotted = run.tape.find_anchor("phase/plotted").state
    assert "plots/regions.png" in plotted["summary"] and "840 ms" in plotted["summary"]
    # A wrong turn taken back: its prompt and answer leave the next view, the turn that sent them still rebuilds.
    retract = run.entries("event", "retract")[-1].payload["data"]
    ((first, last),) = retract["ids"]
    assert retract["reason"] == "the figure was wrong" and "4,000,000" in run.tape.text(run.tape.get(first))
    assert not {first, last} & set(run.tape.view().entry_ids) and {first, last} <= run.tape.retracted()
    assert f"Retracted #{first}–#{last}" in run.text("%tape retract")
    assert "1 left (1 retracted)" in run.text("%context --diff turn:-1 last")  # the answer was not in that request


def check_memory(run: Executed) -> None:
    zone = run.tape.memory
    history = zone.history()
    assert [version.version for version in history] == list(range(1, len(history) + 1)) and len(history) >= 6
    assert history[-1].current and zone.read().is_empty  # cleared last
    assert any(version.long_term_chars and version.daily_count == 2 for version in history)
    asked = next(
        entry for entry in run.entries("message") if entry.payload.get("content") == "What do you know about me?"
    )
    system = run.tape.read(asked.id - 1, asked.id)[0]
    assert system.kind == "system" and "<memory>" in system.payload["content"]
    assert "census" in system.payload["content"]
    assert "The system prompt has a `<memory>` block." in run.text("%%bub\nWhat do you know")


def check_tapes_as_dataframes(run: Executed) -> None:
    images = [output for output in run.outputs() if "image/png" in output.get("data", {})]
    assert len(images) == 4  # entries per phase, tokens per turn, tokens per day per tape, the phase timeline
    shipped = sorted(path.name for path in (EXAMPLES / "data").rglob("*"))
    assert sorted(path.name for path in (run.folder / "data").rglob("*")) == shipped  # nothing written there
    tapes = run.text("everything = bub_nb.read_tapes(home)")
    assert "494727f0da168296__0898b22730d57afc" in tapes and "4d379f4d08d1280e__b964cebb99de6241" in tapes
    assert "context_length_exceeded" in run.text('tape.find_anchor("auto_handoff')
    latency = run.text('turns.groupby("model")')
    assert "openai:gpt-4o-mini" in latency and latency.count("gpt-4o-mini") == 1  # Bub's spelling and ours: one row
    assert "fs.read" in run.text('calls.groupby("tool_dotted")')
    assert "share before the first handoff" in run.text("spent = turns.assign")
    overflowed = run.text("overflows = everything")
    assert "494727f0da168296__0898b22730d57afc" in overflowed and "4d379f4d08d1280e" not in overflowed
    assert "2026-02-09" in run.text("everything.tape.usage(by=[pd.Grouper")
    assert "494727f0da168296__0898b22730d57afc" in run.text("from bub_nb.tape.frames import read_frame")
    assert len(run.tape) == 0  # no model ran


def check_plugins(run: Executed) -> None:
    asked = [output for output in run.outputs("%%bub\nWhere does your view start") if "data" in output]
    with_digest, without = (output.data["text/plain"] for output in asked)
    assert "The view starts at anchor `session/start`." in with_digest
    assert "The view starts at anchor `phase/weighted`" in without
    assert "3 assistant" in with_digest and "3 assistant" not in without
    offered = run.text("%%bub --tools word_count")
    assert "`word_count`" in offered and "`convert_temperature`" in offered and "`tape_handoff`" not in offered
    call = run.entries("tool_call")[-1]
    assert [c["function"]["name"] for c in call.payload["calls"]] == ["convert_temperature"]
    assert run.tape.read(call.id + 1, call.id + 2)[0].payload == {"results": ["294.65"]}
    assert "invalid_input" in run.text("next(entry for entry in turn.entries")


def check_instruments(run: Executed) -> None:
    prompts = [e.payload["content"] for e in run.tape.read(kinds=("message",)) if e.payload.get("role") == "user"]
    fork = open_tape(f"{run.tape.name}__replay__offline", home=run.tape.path.parent.parent if run.tape.path else None)
    replayed = [e.payload["content"] for e in fork.read(kinds=("message",)) if e.payload.get("role") == "user"]
    assert replayed == prompts[:3] and len(prompts) == 4  # the last prompt came after the replay
    assert "Messages the turn sent" in run.text("%context --turn -1")
    diff = run.text("import bub_nb")
    assert "every entry that left is before lesson/1: True" in diff and " 0 entered" in diff
    assert "Context diff turn #" in run.text("%context --diff turn:-2 turn:-1")
    before, after = run.text('print("entries on').split("before and after:")[1].split()[:2]
    assert before == after  # the replay only read the notebook's tape
    totals = run.text("runs = df")
    for side in ("tokens in", "tokens out"):
        line = next(line for line in totals.splitlines() if line.startswith(side))
        assert line.split(":")[1].split("=")[0].strip() == line.split("=")[1].strip()
    assert "cost" in run.text("from bub_nb.notebook.widgets import TapeTimeline")
    refusal = run.text("before = len(tape)")
    assert "over the budget of 400; nothing was written: hand off" in refusal
    counts = refusal.split("refusal:")[1].split()
    assert counts[0] == counts[1]
    after_handoff = [o for o in run.outputs("%%bub --budget") if o.output_type == "display_data"]
    assert [o.metadata["bub_nb"]["anchor"] for o in after_handoff] == ["lesson/2"]


def check_agent_and_data(run: Executed) -> None:
    call = run.entries("tool_call")[0].payload["calls"][0]["function"]
    assert (call["name"], json.loads(call["arguments"])) == ("notebook_inspect", {"name": "weather"})
    inspected = run.entries("tool_result")[0].payload["results"][0]
    for line in ("8 rows × 4 columns", "- temp_c: float64", "- rain_mm: float64, 1 null"):
        assert line in inspected and line in run.text("%%bub\nWhat columns")
    refused, approved, figure = (entry.payload["results"][0] for entry in run.entries("tool_result")[1:])
    assert refused["kind"] == "refused" and "Nothing ran" in refused["message"]  # headless: no one to click
    assert "False" in run.text('"temp_f" in weather.columns')
    assert "stdout:\ncity\nLima    74.5\nOslo    34.7" in approved
    assert "640×480 px figure with 1 axes [title 'Temperature'; x 'day'; legend 'Lima', 'Oslo'; 2 lines]" in figure
    assert any("image/png" in output.get("data", {}) for output in run.outputs("%%bub --tools python.run\nrun: ax"))
    assert "'temp_f'" in run.text("%config BubMagics.allow_code = False")
    cells = [entry.payload["data"]["source"] for entry in run.entries("event", "notebook.cell")]
    assert len(cells) == 2 and cells[0].startswith('weather["temp_f"]') and cells[1].startswith("ax = ")
    assert "notebook.cell" in run.text('frame = %tape df\nframe[frame.name == "notebook.cell"]')


def check_other_agents_logs(run: Executed) -> None:
    reports = run.text("pd.DataFrame(\n    [(r.tape, r.format")
    assert "claude-code-review" in reports and "codex-migration" in reports
    printed = run.text("codex = bub_nb.import_log")
    assert "Imported 11 codex records" in printed and "11 mapped, 0 kept as events" in printed
    # The view is the main agent's: its Task call, the result, its answer; the sub-agent stays on the tape, hidden.
    view = run.text('[(m["role"], str(m.get("content"))[:60])')
    assert view.count("('assistant'") == 2 and view.count("('tool'") == 1
    usage = run.text("frame.tape.kinds")
    assert "141275" in usage and "req_011CVJ517iGrQqjVFtrWsUgP" in usage
    # One frame holds the two tapes Bub wrote and the two imported logs, with their own dates.
    kinds = run.text("every = bub_nb.read_tapes(home)")
    assert all(
        name in kinds for name in ("claude-code-review", "codex-migration", "494727f0da168296__0898b22730d57afc")
    )
    spend = run.text("spend = every.groupby")
    assert "305335" in spend  # the Claude Code session's prompt tokens, cache reads and writes included
    timeline = run.text('every.groupby("tape_name")["date"]')
    assert "2025-11-19 22:53:34.908" in timeline and "2025-12-28 12:18:30.533" in timeline


def check_agents(run: Executed) -> None:
    analyst, reviewer = (open_tape(f"agents~{name}", store=run.tape.base_store) for name in ("analyst", "reviewer"))
    handed = reviewer.find_anchor("review/march")
    record = handed.state["context_handoff"]
    assert (record["from"], record["to"]) == ("agent:analyst", "agent:reviewer")
    assert record["content"]["ownership"] == "transfer"
    cited = [reviewer.resolve(ref) for ref in record["content"]["refs"]]
    assert [(e.kind, e.payload["role"]) for e in cited] == [("message", "user"), ("message", "assistant")]
    assert cited[0].payload["content"] == "The March sales were 120, 95 and 130. What is their mean?"
    # The reviewer answered from exactly what it was handed: its view began at the handoff anchor, nothing copied.
    first_run = next(entry for entry in reviewer.read() if entry.name == "run")
    assert first_run.payload["data"]["view"]["anchor"] == handed.id
    answer = run.text("%%bub\nIs the analyst's mean right?")
    assert "handed over by `agent:analyst`" in answer and "tape://agents~analyst/entry/6" in answer
    assert "'analyst' handed the conversation to 'reviewer'" in run.text("try:")
    assert "(shown here, not sent to the model)" in run.text("%context --agent reviewer --expand-refs")
    back = analyst.find_anchor("review/done").state["context_handoff"]
    assert back["from"] == "agent:reviewer" and back["content"]["refs"] == ["tape://agents~reviewer/entry/7"]
    assert "starts at anchor `review/done`" in run.text("%%bub\nThanks.")
    assert "reviewer cites 3 entries of analyst's tape by reference" in run.text("print(bub_nb.diff_views")
    assert "**reviewer** from step 3; **analyst** from step 6" in run.text("from IPython.display import Markdown")
    # The notebook's own agent never ran: its tape holds the agents' definitions, which a restart reads, and the
    # notebook it belongs to.
    assert {(entry.kind, entry.name) for entry in run.tape.read()} == {("event", "agent"), ("event", "notebook")}


def check_lesson_context(run: Executed) -> None:
    # The window fills: %context --next gauges the whole request against the echo model's 800 tokens.
    shown = run.text("%context --next")
    assert "/ 800 tokens" in shown and "tool schemas" in shown and "reply priming" in shown
    # The handoff's state reaches the model; the overflow refused a request, handed off and retried.
    assert "The anchor `trip/decided` carries: summary: Class trip for 24" in run.text("%%bub -m echo\nWhat do you")
    overflow = run.tape.find_anchor("auto_handoff/context_overflow")
    assert overflow.state is not None and overflow.state["reason"] == "context_length_exceeded"
    retried = run.text("%%bub -m echo\nFact 6")
    assert "Warning: The prompt did not fit" in retried and "view from anchor auto_handoff/context_overflow" in retried
    assert "Fact 1:" not in retried.split("Warning:")[0]
    timeline = run.text("TapeTimeline(tape, model=echo)")
    assert "[refused]" in timeline and "| window 800" in timeline
    # The fork goes back to the decision: its view starts at the intention carrying trip/decided's summary.
    fork = open_tape("lesson-context-plane", home=run.folder.parent / "home")
    assert fork.view().anchor is not None and fork.view().anchor.name == "intention"
    assert "we chose the train" in run.text("%%bub -m offline:echo\nHow do we travel?")
    # The prompt cache's section: within a phase the next request repeats the whole last one, after the handoff
    # only its system prompt (offline there is no cache to report; test_llama_server runs it on llama-server).
    (before_handoff,) = [cell for cell in run.code_cells if cell.source == "%context --next"]
    assert "100% of its" in "".join(o.get("data", {}).get("text/plain", "") for o in before_handoff.outputs)
    assert "the first 1 messages of turn" in run.text("%handoff trip/cached")
    cache = open_tape("lesson-context-cache", home=run.folder.parent / "home")
    assert cache.to_frame().tape.runs()["phase"].tolist() == ["session/start"] * 3 + ["trip/cached"]
    # The exercises ship empty: each says "Not done yet" without stopping Run All, and the attempt is recorded.
    checks = [text for text in (run.text("# Exercise 1"), run.text("# Exercise 2"), run.text("fork = ")) if text]
    assert len(checks) == 3 and all(text.startswith("Not done yet") for text in checks), checks
    attempts = [e for e in run.tape.read(kinds=("event",)) if e.payload.get("name") == "exercise.check"]
    assert [e.payload["data"]["done"] for e in attempts] == [False, False]


def check_mcp(run: Executed) -> None:
    assert "MCP server `tapes` started (stdio): 7 tools" in run.text("import shutil")
    assert "running  mcp.tapes.list_tapes" in run.text("%mcp")
    call = next(entry for entry in run.tape.read() if entry.kind == "tool_call")
    ((call_id, origin),) = call.meta["mcp"].items()
    assert call.payload["calls"][0]["id"] == call_id and origin["server"] == "tapes" and origin["tool"] == "search"
    result = next(entry for entry in run.tape.read() if entry.kind == "tool_result").payload["results"][0]
    assert "Time zones" in result and "tape://" in result
    assert "mcp.tapes.search" in run.text("frame.tape.tool_calls()")
    assert "tool schemas" in run.text("%context --next")
    assert "stopped and removed" in run.text("%mcp remove tapes")


CHECKS: dict[str, Callable[[Executed], None]] = {
    "mcp.ipynb": check_mcp,
    "agents.ipynb": check_agents,
    "lesson-context.ipynb": check_lesson_context,
    "agent-and-data.ipynb": check_agent_and_data,
    "quickstart.ipynb": check_quickstart,
    "instruments.ipynb": check_instruments,
    "context-and-handoff.ipynb": check_context_and_handoff,
    "memory.ipynb": check_memory,
    "tapes-as-dataframes.ipynb": check_tapes_as_dataframes,
    "plugins.ipynb": check_plugins,
    "other-agents-logs.ipynb": check_other_agents_logs,
}


@pytest.fixture(params=NOTEBOOKS)
def executed(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Executed]:
    yield execute(request.param, tmp_path)


def test_every_example_runs_top_to_bottom_offline_and_shows_what_it_teaches(executed: Executed) -> None:
    cells = executed.code_cells
    assert all(cell.execution_count is not None for cell in cells)
    assert [cell.execution_count for cell in cells] == sorted(cell.execution_count for cell in cells)
    for cell in cells:
        for output in cell.outputs:
            assert output.output_type != "error", cell.source
            assert not (output.output_type == "stream" and output.name == "stderr"), (cell.source, output.text)
    CHECKS[executed.name](executed)


def test_every_example_has_checks() -> None:
    assert set(NOTEBOOKS) == set(CHECKS), "give each example notebook a check_<name> in this file"


def test_examples_are_committed_without_outputs() -> None:
    for name in NOTEBOOKS:
        notebook = nbformat.read(EXAMPLES / name, as_version=4)
        nbformat.validate(notebook)
        for cell in notebook.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, (name, cell.source)
        assert notebook.cells[0].cell_type == "markdown" and notebook.cells[0].source.startswith("# "), name
        assert "## Where next" in notebook.cells[-1].source, name


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_an_example_run_twice_from_the_top_shows_the_same_outputs(name: str, tmp_path: Path) -> None:
    first = execute(name, tmp_path)
    again = execute(name, tmp_path)  # the same folder and home: Restart Kernel and Run All
    assert again.tape.name == first.tape.name and len(again.tape) == len(first.tape)
    assert comparable_outputs(again) == comparable_outputs(first)


def test_a_print_the_kernel_sent_in_two_messages_compares_as_one() -> None:
    """A busy kernel may flush one ``print`` as its text and then its newline; a frontend shows one output."""
    timeline = "Timeline of tape instruments: 24 entries\nPhases"
    whole = [nbformat.v4.new_output("stream", name="stdout", text=timeline + "\n")]
    split = [nbformat.v4.new_output("stream", name="stdout", text=text) for text in (timeline, "\n")]
    assert shown_text(split) == shown_text(whole) == timeline + "\n"
    error = nbformat.v4.new_output("stream", name="stderr", text="careful\n")
    assert shown_text([*split[:1], error, *split[1:]]) == f"{timeline}\ncareful\n\n\n"


def comparable_outputs(run: Executed) -> list[str]:
    return [
        comparable(run.name, cell.source, text) for cell, text in zip(run.code_cells, shown_outputs(run), strict=True)
    ]


def test_every_example_that_loads_the_magics_starts_a_lesson_of_its_own_name() -> None:
    for name in NOTEBOOKS:
        notebook = nbformat.read(EXAMPLES / name, as_version=4)
        sources = [cell.source for cell in notebook.cells if cell.cell_type == "code"]
        loads = [source for source in sources if source.startswith("%load_ext bub_nb")]
        if loads:
            assert f"%lesson start {name.removesuffix('.ipynb')}" in loads[0], name
