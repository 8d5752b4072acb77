"""df.tape.runs() and df.tape.tool_calls(): turns and tool calls as tables."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from bub_nb.errors import TapeError
from bub_nb.tape import FileTapeStore, open_tape, read_tapes
from bub_nb.tape.frames.runs import RUN_COLUMNS
from bub_nb.tape.frames.tool_calls import CALL_COLUMNS

pytestmark = pytest.mark.usefixtures("reader")  # every test on each reader (conftest.py)


def test_runs_give_one_row_per_turn_with_one_model_spelling_and_a_latency(example_home: Path) -> None:
    frame = read_tapes(example_home)
    runs = frame.tape.runs()
    assert list(runs.columns) == list(RUN_COLUMNS)
    assert len(runs) == ((frame["kind"] == "event") & (frame["name"] == "run")).sum()
    assert set(runs["model"]) == {"openai:gpt-4o-mini"}  # Bub's "gpt-4o-mini" with provider "openai" too
    assert runs["latency_s"].notna().all() and (runs["latency_s"] >= 0).all()
    assert (runs["end"] >= runs["start"]).all() and runs["prompt"].notna().all()
    usage = frame.tape.usage(by="tape_name")
    assert runs.groupby("tape_name")["input_tokens"].sum().to_dict() == usage["tokens_in"].to_dict()


def test_runs_read_bub_nb_turns_elapsed_time_steps_and_tokens(tmp_path: Path) -> None:
    tape = open_tape("t", store=FileTapeStore(tmp_path))
    tape.handoff("phase/a")
    tape.append_message({"role": "user", "content": "q"}, run_id="r1")
    tape.append_message({"role": "assistant", "content": "partial a"}, run_id="r1", partial=True)
    usage = {"prompt_tokens": 10, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 4}}
    data = {"status": "interrupted", "model": "openai:m", "elapsed_ms": 1500, "steps": 1, "usage": usage}
    tape.append_event("run", data, run_id="r1")
    (run,) = tape.to_frame().tape.runs().to_dict("records")
    assert run["latency_s"] == 1.5 and run["steps"] == 1 and run["cached_tokens"] == 4 and run["partial"]
    assert run["status"] == "interrupted" and run["answer"] == "partial a" and run["phase"] == "phase/a"


def test_tool_calls_pair_results_and_failures_by_call_id(tmp_path: Path) -> None:
    tape = open_tape("t", store=FileTapeStore(tmp_path))
    calls = [
        {"id": "c1", "type": "function", "function": {"name": "fs_read", "arguments": '{"path": "a"}'}},
        {"id": "c2", "type": "function", "function": {"name": "fs.write", "arguments": "not json"}},
    ]
    tape.append_tool_call(calls)
    tape.append_tool_result(["text of a", {"error": "disk full"}])
    tape.append_error("tool.failed", "disk full", {"tool": "fs.write", "call_id": "c2"})
    table = read_tapes(tmp_path).tape.tool_calls().set_index("call_id")
    assert sorted(table.reset_index().columns) == sorted(CALL_COLUMNS)
    assert table.loc["c1", "tool_dotted"] == "fs.read" and table.loc["c2", "tool_wire"] == "fs_write"
    assert table.loc["c1", "arguments"] == {"path": "a"} and table.loc["c2", "arguments"] == "not json"
    assert table.loc["c1", "ok"] and not table.loc["c2", "ok"]
    assert table.loc["c2", "error_kind"] == "tool.failed" and table.loc["c2", "error_message"] == "disk full"
    assert (table["seconds"] >= 0).all()


def test_an_mcp_tools_dotted_name_names_its_server_and_tool(tmp_path: Path) -> None:
    tape = open_tape("t", store=FileTapeStore(tmp_path))
    calls = [
        {"id": "c1", "type": "function", "function": {"name": "mcp_my_db_run_query", "arguments": "{}"}},
        {"id": "c2", "type": "function", "function": {"name": "memory_save", "arguments": "{}"}},
        {"id": "c3", "type": "function", "function": {"name": "mcp__tapes_2__search", "arguments": "{}"}},
    ]
    origin = {"server": "my_db", "tool": "run_query", "protocol": "2025-06-18"}
    tape.append_tool_call(calls, mcp={"c1": origin})
    tape.append_tool_result(["rows", "saved", "hits"])
    table = read_tapes(tmp_path).tape.tool_calls().set_index("call_id")
    assert table.loc["c1", "tool_wire"] == "mcp_my_db_run_query"
    assert table.loc["c1", "tool_dotted"] == "mcp.my_db.run_query"  # not mcp.my_db_run_query
    assert table.loc["c2", "tool_dotted"] == "memory.save"
    assert table.loc["c3", "tool_dotted"] == "mcp.tapes_2.search"  # Claude Code's and Codex's spelling


def test_tables_of_an_empty_frame_have_their_columns(example_home: Path) -> None:
    empty = pd.concat([read_tapes(example_home).iloc[:0]])
    assert list(empty.tape.runs().columns) == list(RUN_COLUMNS)
    assert list(empty.tape.tool_calls().columns) == list(CALL_COLUMNS)


def test_plots_are_returned_as_figures(tmp_path: Path, example_home: Path) -> None:
    from matplotlib.figure import Figure

    frame = read_tapes(example_home)
    figures = [
        frame.tape.plot.tokens(by="tape_name"),
        frame.tape.plot.timeline(),
        frame.tape.plot.tool_failures(),
        frame.iloc[:0].tape.plot.tokens(),
    ]
    for number, figure in enumerate(figures):
        assert isinstance(figure, Figure) and figure.axes
        figure.savefig(tmp_path / f"{number}.png")
    assert len(figures[1].axes[0].get_yticklabels()) == 2  # a lane per tape


def test_helpers_ask_only_for_the_columns_they_read(example_home: Path) -> None:
    frame = read_tapes(example_home)
    lean = frame.drop(columns=["payload", "meta"])
    assert len(lean.tape.after("phase/docs")) == len(frame.tape.after("phase/docs"))
    with pytest.raises(TapeError, match=r"df.tape.runs\(\) needs .* missing: \['meta', 'payload'\]"):
        lean.tape.runs()
    with pytest.raises(AttributeError, match=r"\['id'\] is the index: call reset_index\(\) first"):
        frame.set_index("id").tape.after("phase/docs")
    pd.testing.assert_frame_equal(frame.set_index("id").reset_index().tape.runs(), frame.tape.runs())
