"""``handoff_at``: a summarising handoff before the turn whose request would pass that share of the window."""

from __future__ import annotations

import pytest

from bub_nb import Tape
from bub_nb.agent import Agent
from bub_nb.agent.loop import HANDOFF_AT_ANCHOR
from bub_nb.agent.models import OfflineModel
from bub_nb.errors import BubNbError
from bub_nb.tape.stores.memory import MemoryTapeStore


def test_a_turn_that_would_pass_handoff_at_is_preceded_by_a_summarising_handoff_said_in_its_notices() -> None:
    tape = Tape("early", MemoryTapeStore())
    agent = Agent(tape, OfflineModel(context_window=2000), handoff_at=0.5)
    turns = [agent.run(f"Fact {n}: the sensor in room {n} reads {n * 7} degrees. " * 3) for n in range(1, 12)]
    early = [turn for turn in turns if any(HANDOFF_AT_ANCHOR in notice for notice in turn.notices)]
    assert early, "some turn passed half the window"
    assert tape.anchor_names().count(HANDOFF_AT_ANCHOR) == len(early)
    anchor = tape.find_anchor(HANDOFF_AT_ANCHOR)
    assert anchor.state and anchor.state["summary"] and anchor.state["sources"]
    assert all(not turn.notices or "context_overflow" not in " ".join(turn.notices) for turn in turns)
    assert all(turn.ok for turn in turns)


def test_handoff_at_must_be_a_share_of_the_window() -> None:
    tape = Tape("bad", MemoryTapeStore())
    for bad in (0, 1.5, -0.2, True):
        with pytest.raises(BubNbError, match="share of the model's window"):
            Agent(tape, "offline", handoff_at=bad)
