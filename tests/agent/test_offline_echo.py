"""The offline model's echo mode shows what each message holds, the anchor's state and the memory block."""

from __future__ import annotations

from pathlib import Path

import bub_nb  # noqa: F401  (registers Tape.memory)
from bub_nb import open_tape
from bub_nb.agent import Agent
from bub_nb.agent.models import OfflineModel, resolve_model


def test_echo_lists_each_message_the_anchor_state_and_the_memory_not_the_tools(tmp_path: Path) -> None:
    tape = open_tape("echo", home=tmp_path)
    model = resolve_model("offline:echo")
    assert isinstance(model, OfflineModel) and model.echo
    Agent(tape, model).run("Fact 1: the trip starts in Lyon")
    tape.memory.save_long_term("the class prefers trains")
    tape.handoff("lesson/decision", {"summary": "We take the train", "next_steps": "Book seats"})
    text = Agent(tape, model).run("Fact 2: the train leaves at nine").text
    assert "Fact 1" not in text  # it left the view with the handoff
    assert "user: Fact 2: the train leaves at nine" in text
    assert "The anchor `lesson/decision` carries: summary: We take the train; next_steps: Book seats" in text
    assert "The memory block holds:" in text and "the class prefers trains" in text
    assert "tools offered (not listed)" in text and "`tape_handoff`" not in text
    shown = Agent(tape, OfflineModel(echo=True, show_tools=True)).run("And the tools?").text
    assert "Tools offered: `tape_handoff`" in shown
