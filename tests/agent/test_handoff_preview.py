"""A handoff previewed before it is written: the preview writes nothing, accepting writes what it showed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bub_nb.agent import Agent
from bub_nb.errors import BubNbError
from bub_nb.tape import Tape


def tape_bytes(tape: Tape) -> bytes:
    return Path(tape.path).read_bytes()  # type: ignore[arg-type]


def test_a_preview_writes_nothing_and_accepting_writes_what_it_showed_without_asking_again(
    tape: Tape, openai_server: Any, model: Any
) -> None:
    openai_server.reply("We will keep 1,200 rows of data/sales.csv.")
    agent = Agent(tape, model=model)
    agent.run("Load data/sales.csv: 1,200 rows in 42 ms.")
    asked = [entry.id for entry in tape.read() if entry.kind == "message"]
    openai_server.reply(f"Summary:\nLoaded data/sales.csv, 1,200 rows in 42 ms [#{asked[0]}].\nNext steps:\nPlot it.")
    before, requests = tape_bytes(tape), len(openai_server.requests)

    preview = agent.preview_handoff("phase/loaded", owner="ana")

    assert tape_bytes(tape) == before and len(openai_server.requests) == requests + 1
    assert preview.state["summary"] == f"Loaded data/sales.csv, 1,200 rows in 42 ms [#{asked[0]}]."
    assert preview.state["owner"] == "ana" and preview.state["next_steps"] == "Plot it."
    assert preview.retention is not None and preview.retention.counts()["path"] == (1, 1)
    assert preview.tokens_before == agent.view().total_tokens and preview.tokens_after > 0
    written = preview.accept()
    assert len(openai_server.requests) == requests + 1  # accepting asked the endpoint nothing
    assert [entry.kind for entry in written] == ["event", "anchor", "event"]
    assert [(e.kind, e.payload, e.meta) for e in written] == [(e.kind, e.payload, e.meta) for e in preview.entries]
    assert tape.last_anchor().state == preview.state  # type: ignore[union-attr]
    assert agent.view().total_tokens == preview.tokens_after


def test_a_stale_preview_is_refused_in_one_line_and_writes_nothing(tape: Tape) -> None:
    agent = Agent(tape, model="offline")
    agent.run("We decided to use polars.")
    preview = agent.preview_handoff("phase/1")
    tape.append_message({"role": "user", "content": "one more thing"})
    count = len(tape)
    with pytest.raises(BubNbError, match=r"stale: the tape was at #\d+ and is now at #\d+; nothing was written"):
        preview.accept()
    assert len(tape) == count


def test_a_plain_handoff_can_be_previewed_too(tape: Tape) -> None:
    agent = Agent(tape, model="offline")
    agent.run("hello")
    preview = agent.preview_handoff("phase/plain", summarize=False, owner="me")
    assert preview.state == {"owner": "me"} and preview.retention is None
    assert [entry.kind for entry in preview.accept()] == ["anchor", "event"]
