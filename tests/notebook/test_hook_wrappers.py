"""A wrapper registered on the shared pipeline runs around the builtin model stage of every ``%%bub`` cell."""

from __future__ import annotations

from collections.abc import AsyncIterator, Generator
from typing import Any

import pytest
from harness.shell import Notebook

import bub_nb.agent.registry as registry
from bub_nb.agent import StreamEvent, hookimpl, register_plugin


class Shout:
    """Upper-cases the streamed answer the notebook is sent; the tape keeps what the model said."""

    def __init__(self) -> None:
        self.sessions: list[str] = []
        self.sent: list[str] = []

    @hookimpl(wrapper=True)
    def run_model_stream(self, session_id: str) -> Generator[None, Any, Any]:
        stream = yield
        self.sessions.append(session_id)

        async def louder() -> AsyncIterator[StreamEvent]:
            async for event in stream:
                if event.kind == "text":
                    self.sent.append(event.data["delta"].upper())
                    event = StreamEvent.text(self.sent[-1])
                yield event

        return louder()


def test_a_bub_cell_streams_through_a_wrapper_around_the_builtin_agent(
    nb: Notebook, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(registry, "_pipeline", None)  # a shared pipeline of this test's own
    shout = Shout()
    register_plugin(shout, name="shout")

    nb.run("%%bub\nSay hello to the class")

    answer = [e for e in nb.tape.read() if e.kind == "message" and e.payload["role"] == "assistant"][-1]
    assert shout.sessions == ["notebook:" + nb.magics.session.chat_id()]
    assert answer.payload["content"] != answer.payload["content"].upper()  # the tape keeps the facts
    assert "".join(shout.sent) == answer.payload["content"].upper()
