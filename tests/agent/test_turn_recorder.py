"""The turn recorder is told what happens and writes the turn itself; a Turn is built from named fields."""

from __future__ import annotations

import pytest

from bub_nb.agent import Turn
from bub_nb.agent.models import Completion, ToolCall, Usage
from bub_nb.agent.turn.recorder import TurnRecorder
from bub_nb.context import build_view
from bub_nb.errors import ToolCallError
from bub_nb.tape import MemoryTapeStore, Tape


@pytest.fixture
def tape() -> Tape:
    tape = Tape("lesson", MemoryTapeStore())
    tape.ensure_bootstrap_anchor()
    return tape


def test_a_recorder_told_each_step_writes_the_turn_in_order(tape: Tape) -> None:
    recorder = TurnRecorder(tape, "offline")
    recorder.start("Be brief.", "Count the anchors")
    messages = recorder.begin_step(build_view(tape))
    assert messages[0] == {"role": "system", "content": "Be brief."} and messages[-1]["content"] == "Count the anchors"

    calls = (ToolCall("c1", "tape.anchors", "{}"), ToolCall("c2", "tape.info", "{}"))
    recorder.end_step(Completion("", calls, Usage(10, 2, 12)))
    recorder.tools_started(Completion("", calls))
    recorder.tool_returned("session/start")
    recorder.tool_returned({"kind": "error", "message": "no"}, ToolCallError("tape.info", "error", "no"))
    recorder.tools_finished()
    recorder.begin_step(build_view(tape))
    recorder.add_text("One ")
    recorder.add_text("anchor.")
    recorder.end_step(Completion("One anchor.", usage=Usage(12, 3, 15)))
    turn = recorder.finish("ok", recorder.partial)

    kinds = [e.kind for e in turn.entries]
    assert kinds == ["system", "message", "tool_call", "tool_result", "error", "message", "event"]
    assert turn.entries[3].payload["results"][0] == "session/start" and turn.steps == 2
    assert turn.text == "One anchor." and turn.usage is not None and turn.usage.total_tokens == 27


def test_an_interrupt_keeps_the_partial_answer_and_closes_the_calls_still_running(tape: Tape) -> None:
    recorder = TurnRecorder(tape, "offline")
    recorder.start("", "Look around")
    recorder.begin_step(build_view(tape))
    recorder.add_text("Looking")
    calls = (ToolCall("c1", "tape.info", "{}"), ToolCall("c2", "tape.search", "{}"))
    recorder.tools_started(Completion("Looking", calls))
    recorder.tool_returned("12 entries")
    turn = recorder.interrupt()
    recorder.tool_returned("late")  # whatever arrives after the turn closed is not written
    recorder.tools_finished()

    assert turn.status == "interrupted" and turn.text == "Looking"
    (results,) = [e.payload["results"] for e in turn.entries if e.kind == "tool_result"]
    assert results[0] == "12 entries" and "interrupted before it returned" in results[1]["message"]
    assert tape.read()[-1].kind == "event" and tape.read()[-1].id == turn.entries[-1].id


def test_a_turn_takes_its_fields_by_name() -> None:
    with pytest.raises(TypeError):
        Turn("text", (), None, "ok", "offline", "run", 1.0)  # type: ignore[misc]
    turn = Turn(text="hi", entries=(), usage=None, status="ok", model="offline", run_id="r", elapsed_ms=1.0)
    assert turn.ok and str(turn) == "hi"
