"""How a turn's streamed text reaches an ACP client: the first chunk at once, the rest joined while one is on its way.

The client is the boundary faked here: a connection that keeps every update the server sends and notes how far the
model's stream had got when each left. The model hands its reply over as one burst, as an HTTP stream does when its
deltas are already buffered, so nothing between them yields to the event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from acp import schema

from bub_nb.agent.acp import AcpServer, Place
from bub_nb.agent.models import ScriptedModel
from bub_nb.agent.models.base import Completion, Message, TextDelta, ToolSchema

REPLY = "The kettle boiled at seven and the tea steeped for four minutes"


class BurstModel(ScriptedModel):
    """A scripted model whose stream hands every word over without yielding, counting what it has handed."""

    handed = 0

    async def stream(
        self, messages: list[Message], tools: list[ToolSchema] | None = None
    ) -> AsyncIterator[TextDelta | Completion]:
        completion = await self.complete(messages, tools)
        for word in completion.text.split(" "):
            self.handed += 1
            yield TextDelta(word if self.handed == 1 else f" {word}")
        yield completion


class Connection:
    """The client end: every update kept with how many deltas the model had handed over when it was sent."""

    def __init__(self, model: BurstModel) -> None:
        self.model = model
        self.chunks: list[tuple[str, int]] = []

    async def session_update(self, session_id: str, update: Any) -> None:
        if update.session_update == "agent_message_chunk":
            self.chunks.append((update.content.text, self.model.handed))
        await asyncio.sleep(0)  # a real connection yields to the event loop while it writes


def _turn(tmp_path: Path) -> Connection:
    model = BurstModel([REPLY])
    server = AcpServer(Place(str(tmp_path / "home")), model)
    conn = Connection(model)
    server.on_connect(conn)

    async def run() -> None:
        session = await server.new_session(cwd=str(tmp_path))
        prompt = [schema.TextContentBlock(type="text", text="When did the kettle boil?")]
        await server.prompt(session_id=session.session_id, prompt=prompt)

    asyncio.run(run())
    return conn


def test_the_first_chunk_leaves_before_the_model_hands_over_the_rest(tmp_path: Path) -> None:
    chunks = _turn(tmp_path)
    text, handed = chunks.chunks[0]
    assert (text, handed) == ("The", 1)


def test_the_deltas_that_waited_reach_the_client_joined_and_in_order(tmp_path: Path) -> None:
    chunks = _turn(tmp_path).chunks
    assert "".join(text for text, _ in chunks) == REPLY
    assert len(chunks) < len(REPLY.split(" "))  # what came while a chunk was on its way went out together
