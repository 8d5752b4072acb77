"""A handoff previewed and accepted from a comma cell: ``,handoff name=N preview=true``, then ``accept=true``.

(Run from plain Python, a comma command that asks the model nests the event loop as the summarizing
``,handoff`` does; the model tests that count a loop's connections run before this file.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bub_nb.agent import Agent
from bub_nb.errors import BubNbError
from bub_nb.tape import Tape


def tape_bytes(tape: Tape) -> bytes:
    return Path(tape.path).read_bytes()  # type: ignore[arg-type]


def test_the_comma_form_previews_without_writing_and_accepts_what_it_showed(
    tape: Tape, openai_server: Any, model: Any
) -> None:
    openai_server.reply("Noted: 42 ms.")
    agent = Agent(tape, model=model)
    asked = agent.run("It took 42 ms on data/run.log.").entries[1].id
    openai_server.reply(f"Summary:\nIt took 42 ms on data/run.log [#{asked}].")
    before, requests = tape_bytes(tape), len(openai_server.requests)
    shown = agent.run(",handoff name=phase/timed summarize=true preview=true").text
    assert tape_bytes(tape) == before and len(openai_server.requests) == requests + 1
    assert f"It took 42 ms on data/run.log [#{asked}]." in shown and "What the summary keeps: number 1/1" in shown
    assert ",handoff name=phase/timed accept=true" in shown
    done = agent.run(",handoff name=phase/timed accept=true")
    assert len(openai_server.requests) == requests + 1 and "as previewed" in done.text
    assert tape.last_anchor().state["summary"] == f"It took 42 ms on data/run.log [#{asked}]."  # type: ignore[index,union-attr]
    with pytest.raises(BubNbError, match="No preview of handoff 'phase/timed' to accept"):
        agent.run(",handoff name=phase/timed accept=true")
    with pytest.raises(BubNbError, match="takes no more"):
        agent.run(",handoff name=phase/again accept=true summary=mine")
