"""The builtin plugin: the defaults behind every stage of a turn, its model stage an agent's loop."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from datetime import date
from typing import TYPE_CHECKING, Any, cast

from bub_nb.agent.hooks.specs import StreamEvent, field_of, hookimpl
from bub_nb.agent.loop import Agent
from bub_nb.agent.registry import default_pipeline
from bub_nb.agent.state import META_KEYS, TurnAgent, TurnState
from bub_nb.errors import PipelineError
from bub_nb.memory.cache import memory_of
from bub_nb.tape import Tape, session_tape_name, tapes_home
from bub_nb.tape.stores.resolve import file_store

if TYPE_CHECKING:
    from bub_nb.agent.framework import TurnPipeline
    from bub_nb.tape import TapeStore

logger = logging.getLogger("bub_nb")

DEFAULT_INSTRUCTIONS = """\
You are Bub, an assistant working inside a Jupyter notebook. Everything said in this session is \
kept on an append-only tape; what you see is a view rebuilt from that tape on every step.

<context_contract>
- Your view starts at the last anchor. Its state (summary, next steps) is what you inherit.
- When a phase of work is done, or the history grows long, call tape_handoff with a short summary \
and next steps: later steps then start from that anchor, and nothing is deleted.
- Use tape_search and tape_anchors to look back at earlier phases when you need them.
- When the user states a lasting preference or fact, save it with memory_save; log notable work \
with memory_daily.
</context_contract>"""


class BuiltinPlugin:
    """Defaults for every hook: a tape per session, the agent loop as the model stage, and the system prompt.

    The model stage runs the turn's agent (the one its envelope's ``meta`` names, as
    :meth:`~bub_nb.agent.Agent.run` sends it) and leaves its turn in the state. Without one it makes an agent
    for the session's tape in the provided store, running on ``pipeline``: a pipeline made with
    ``TurnPipeline(BuiltinPlugin)`` passes itself; without one, the shared pipeline.
    """

    def __init__(self, pipeline: TurnPipeline | None = None) -> None:
        self.pipeline = pipeline

    @hookimpl
    def resolve_session(self, message: Any) -> str | None:
        session_id = field_of(message, "session_id")
        return str(session_id) if session_id else None

    @hookimpl
    def load_state(self, message: Any, session_id: str) -> dict[str, Any]:
        meta = field_of(message, "meta") or {}
        state: dict[str, Any] = {"session_id": session_id}
        for key in META_KEYS:
            if meta.get(key) is not None:
                state[key] = meta[key]
        return state

    @hookimpl
    def system_prompt(self, prompt: Any, state: dict[str, Any]) -> str:
        turn = cast(TurnState, state)
        parts = [DEFAULT_INSTRUCTIONS]
        tape = turn.get("tape")
        if tape is not None:
            # Day precision: a prompt that changes every second would defeat endpoints' prompt caching.
            parts.append(f"<runtime>\ntoday: {date.today().isoformat()}\ntape: {tape.name}\n</runtime>")
        instructions = turn.get("instructions")
        if instructions:
            parts.append(str(instructions))
        memory = turn.get("memory")
        if memory is None and tape is not None:
            memory = memory_of(tape, ensure=False)
        if memory is not None:
            parts.append(memory.get_context())
        return "\n\n".join(part for part in parts if part)

    @hookimpl
    def provide_tape_store(self) -> TapeStore:
        return file_store(tapes_home())

    @hookimpl
    def on_error(self, stage: str, error: Exception, message: Any) -> None:
        logger.warning("bub_nb %s failed: %s", stage, error)

    @hookimpl
    def run_model(self, prompt: Any, session_id: str, state: dict[str, Any]) -> Any:
        agent = self._agent_for(session_id, state)

        async def answer() -> str:
            try:
                async with contextlib.aclosing(
                    agent.model_stage(_prompt_text(prompt), stream=False, commands=_commands(state))
                ) as deltas:
                    async for _ in deltas:
                        pass
            finally:
                state["turn"] = agent.last_turn
            assert agent.last_turn is not None
            return agent.last_turn.text

        return answer()

    @hookimpl
    def run_model_stream(self, prompt: Any, session_id: str, state: dict[str, Any]) -> AsyncIterator[StreamEvent]:
        agent = self._agent_for(session_id, state)

        async def events() -> AsyncIterator[StreamEvent]:
            try:
                async with contextlib.aclosing(
                    agent.model_stage(_prompt_text(prompt), stream=True, commands=_commands(state))
                ) as deltas:
                    async for delta in deltas:
                        yield StreamEvent.text(delta)
            finally:
                state["turn"] = agent.last_turn

        return events()

    def _agent_for(self, session_id: str, state: dict[str, Any]) -> TurnAgent:
        """The turn's agent: given by the caller, else one for the session's tape in the provided store."""
        turn = cast(TurnState, state)
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


def _commands(state: dict[str, Any]) -> bool:
    """``False`` for a prompt a program made, so its leading ``,`` stays text."""
    return state.get("commands", True) is not False


def _prompt_text(prompt: Any) -> str:
    if isinstance(prompt, str):
        return prompt
    return "\n".join(str(part.get("text", "")) for part in prompt if isinstance(part, dict))
