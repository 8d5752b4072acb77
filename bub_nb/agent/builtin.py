"""The builtin plugin: the defaults behind every stage of a turn, and the shared pipeline."""

from __future__ import annotations

import contextlib
import logging
import threading
import weakref
from collections.abc import AsyncIterator
from datetime import date
from typing import TYPE_CHECKING, Any

from bub_nb.agent.hookspecs import StreamEvent, field_of, hookimpl
from bub_nb.agent.pipeline import TurnPipeline
from bub_nb.memory import MemoryZone
from bub_nb.tape import AnchorRef, is_phase_anchor

if TYPE_CHECKING:
    from bub_nb.agent.loop import Agent
    from bub_nb.memory import MemorySnapshot
    from bub_nb.tape import Tape, TapeStore

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
    """Defaults for every hook: a tape per session, the agent loop, and the system prompt.

    ``pipeline`` is the pipeline agents made for a session use; the shared pipeline sets it to itself.
    """

    def __init__(self, pipeline: TurnPipeline | None = None) -> None:
        self.pipeline = pipeline

    def _agent_for(self, session_id: str, state: dict[str, Any]) -> Agent:
        """The turn's agent: given by the caller, else one for the session's tape in the provided store."""
        agent = state.get("agent")
        if agent is not None:
            return agent  # type: ignore[no-any-return]
        from bub_nb.agent.loop import Agent
        from bub_nb.tape import Tape, session_tape_name

        pipeline = self.pipeline or default_pipeline()
        tape = state.get("tape")
        if tape is None:
            tape = Tape(session_tape_name(".", session_id), pipeline.tape_store())
        state["agent"] = agent = Agent(tape, instructions=state.get("instructions"), pipeline=pipeline)
        return agent

    @hookimpl
    def resolve_session(self, message: Any) -> str | None:
        session_id = field_of(message, "session_id")
        return str(session_id) if session_id else None

    @hookimpl
    def load_state(self, message: Any, session_id: str) -> dict[str, Any]:
        meta = field_of(message, "meta") or {}
        state: dict[str, Any] = {"session_id": session_id}
        for key in ("tape", "agent", "instructions"):
            if meta.get(key) is not None:
                state[key] = meta[key]
        return state

    @hookimpl
    def run_model(self, prompt: Any, session_id: str, state: dict[str, Any]) -> Any:
        agent = self._agent_for(session_id, state)

        async def answer() -> str:
            try:
                turn = await agent.arun(_prompt_text(prompt))
            finally:
                state["turn"] = agent.last_turn
            return turn.text

        return answer()

    @hookimpl
    def run_model_stream(self, prompt: Any, session_id: str, state: dict[str, Any]) -> AsyncIterator[StreamEvent]:
        agent = self._agent_for(session_id, state)

        async def events() -> AsyncIterator[StreamEvent]:
            try:
                async with contextlib.aclosing(agent.astream(_prompt_text(prompt))) as deltas:
                    async for delta in deltas:
                        yield StreamEvent.text(delta)
            finally:
                state["turn"] = agent.last_turn

        return events()

    @hookimpl
    def system_prompt(self, prompt: Any, state: dict[str, Any]) -> str:
        parts = [DEFAULT_INSTRUCTIONS]
        tape: Tape | None = state.get("tape")
        if tape is not None:
            # Day precision: a prompt that changes every second would defeat endpoints' prompt caching.
            parts.append(f"<runtime>\ntoday: {date.today().isoformat()}\ntape: {tape.name}\n</runtime>")
        if state.get("instructions"):
            parts.append(str(state["instructions"]))
        memory = state.get("memory")
        if memory is None and tape is not None:
            memory = memory_of(tape, ensure=False)
        if memory is not None:
            parts.append(memory.get_context())
        return "\n\n".join(part for part in parts if part)

    @hookimpl
    def provide_tape_store(self) -> TapeStore:
        from bub_nb.tape import tapes_home
        from bub_nb.tape.open import file_store

        return file_store(tapes_home())

    @hookimpl
    def on_error(self, stage: str, error: Exception, message: Any) -> None:
        logger.warning("bub_nb %s failed: %s", stage, error)


# The memory each tape was last seen with: its store, the newest memory anchor then, the snapshot.
_memory_seen: weakref.WeakKeyDictionary[Tape, tuple[TapeStore, AnchorRef | None, MemorySnapshot]] = (
    weakref.WeakKeyDictionary()
)


def memory_of(tape: Tape, *, ensure: bool) -> MemorySnapshot:
    """The tape's memory zone for the system prompt; with ``ensure`` written first if there is none (seed 003).

    Every change to the memory zone appends ``memory/...`` anchors, so while the newest one is the one
    seen last time, the snapshot read then is still the memory: the zone is read once per change, not
    on every turn (kept per tape, because a notebook makes an agent per cell).
    """
    store = tape.store
    seen = _memory_seen.get(tape)
    if (
        seen is not None
        and seen[0] is store
        and (seen[2].version > 0 or not ensure)
        and seen[1] == _newest_memory_anchor(store, tape.name)
    ):
        return seen[2]
    zone = MemoryZone(tape)
    snapshot: MemorySnapshot = zone.read()
    if snapshot.version == 0 and ensure:  # no zone yet; ensure() alone would look for one twice
        snapshot = zone.ensure()
    _memory_seen[tape] = (store, _newest_memory_anchor(store, tape.name), snapshot)
    return snapshot


def _newest_memory_anchor(store: TapeStore, tape: str) -> AnchorRef | None:
    for ref in reversed(store.anchors(tape)):
        if not is_phase_anchor(ref.name):
            return ref
    return None


def _prompt_text(prompt: Any) -> str:
    if isinstance(prompt, str):
        return prompt
    return "\n".join(str(part.get("text", "")) for part in prompt if isinstance(part, dict))


_pipeline: TurnPipeline | None = None
_pipeline_lock = threading.Lock()


def default_pipeline() -> TurnPipeline:
    """The process-wide pipeline: the builtin plugin, then entry-point plugins, then registered ones."""
    global _pipeline
    with _pipeline_lock:
        if _pipeline is None:
            builtin = BuiltinPlugin()
            _pipeline = builtin.pipeline = TurnPipeline(builtin)
        return _pipeline


def register_plugin(plugin: object, name: str | None = None) -> str:
    """Add a plugin to the shared pipeline; it runs before every plugin registered earlier.

    Registering a name again replaces that plugin.
    """
    return default_pipeline().register_plugin(plugin, name)


def unregister_plugin(name: str) -> None:
    """Remove a plugin from the shared pipeline."""
    default_pipeline().unregister_plugin(name)
