"""A state or a tool error holding a lone surrogate (a model can reply with anything, and JSON allows it) is shown
wherever states and errors are shown, never a crash: the anchor list, the transcript and the tool-call table."""

from __future__ import annotations

from pathlib import Path

import bub_nb  # noqa: F401  (registers the df.tape accessor)
from bub_nb.tape import open_tape
from bub_nb.tape.reports.transcript import transcript_markdown

LONE = "half \ud800 a pair"


def test_an_anchor_whose_state_holds_a_lone_surrogate_is_listed_and_written_out(tmp_path: Path) -> None:
    tape = open_tape("surrogates", home=tmp_path)
    tape.append_message({"role": "user", "content": "hello"})
    tape.handoff("phase/odd", {"summary": LONE, "detail": {"note": LONE}})
    (summary,) = [anchor for anchor in tape.anchors(limit=None) if anchor.name == "phase/odd"]
    assert "\\ud800" in summary.to_markdown() and "\\ud800" in summary._repr_html_()
    assert "phase/odd" in transcript_markdown(tape)


def test_a_tool_error_holding_a_lone_surrogate_is_a_row_of_the_tool_calls(tmp_path: Path) -> None:
    tape = open_tape("surrogates", home=tmp_path)
    call = {"id": "c1", "type": "function", "function": {"name": "fs_read", "arguments": '{"path": "a"}'}}
    tape.append_tool_call([call])
    tape.append_tool_result([{"error": {"detail": LONE}, "kind": "tool.error"}])
    calls = tape.to_frame().tape.tool_calls()
    assert len(calls) == 1 and not calls.iloc[0]["ok"] and LONE in calls.iloc[0]["error_message"]
