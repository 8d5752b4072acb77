"""The builtin hooks that run an agent: a turn's model stage is an :class:`~bub_nb.agent.Agent` turn."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from bub_nb.agent.framework import TurnPipeline
from bub_nb.agent.hooks.specs import StreamEvent, hookimpl
from bub_nb.agent.loop import Agent
from bub_nb.agent.registry import default_pipeline
from bub_nb.agent.state import TurnAgent, turn_state
from bub_nb.errors import PipelineError
from bub_nb.tape import Tape, session_tape_name


class AgentRunner:
    """``run_model`` and ``run_model_stream``: the turn's agent answers the prompt and leaves its turn in the state.

    ``pipeline`` is the pipeline the agents it makes for a session run on: a pipeline made with
    ``TurnPipeline(BuiltinPlugin)`` passes itself; without one they run on the shared pipeline.
    """

    def __init__(self, pipeline: TurnPipeline | None = None) -> None:
        self.pipeline = pipeline

    def _agent_for(self, session_id: str, state: dict[str, Any]) -> TurnAgent:
        """The turn's agent: given by the caller, else one for the session's tape in the provided store."""
        turn = turn_state(state)
        agent = turn.get("agent")
        if agent is not None:
            return agent
        pipeline = self.pipeline or default_pipeline()
        tape = turn.get("tape")
        if tape is None:
            store = pipeline.tape_store()
            if store is None:
                raise PipelineError(f"No plugin provides a tape store for session {session_id!r}; pass a tape instead")
            tape = Tape(session_tape_name(".", session_id), store)
        turn["agent"] = made = Agent(tape, instructions=turn.get("instructions"), pipeline=pipeline)
        return made

    @hookimpl
    def run_model(self, prompt: Any, session_id: str, state: dict[str, Any]) -> Any:
        agent = self._agent_for(session_id, state)

        async def answer() -> str:
            try:
                turn = await agent.arun(_prompt_text(prompt), **_typed(state))
            finally:
                turn_state(state)["turn"] = agent.last_turn
            return turn.text

        return answer()

    @hookimpl
    def run_model_stream(self, prompt: Any, session_id: str, state: dict[str, Any]) -> AsyncIterator[StreamEvent]:
        agent = self._agent_for(session_id, state)

        async def events() -> AsyncIterator[StreamEvent]:
            try:
                async with contextlib.aclosing(agent.astream(_prompt_text(prompt), **_typed(state))) as deltas:
                    async for delta in deltas:
                        yield StreamEvent.text(delta)
            finally:
                turn_state(state)["turn"] = agent.last_turn

        return events()


def _typed(state: dict[str, Any]) -> dict[str, Any]:
    """``commands=False`` for a prompt a program made, so its leading ``,`` stays text; nothing otherwise."""
    return {} if turn_state(state).get("commands", True) else {"commands": False}


def _prompt_text(prompt: Any) -> str:
    if isinstance(prompt, str):
        return prompt
    return "\n".join(str(part.get("text", "")) for part in prompt if isinstance(part, dict))
