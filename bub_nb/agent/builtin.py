"""The builtin plugin: the defaults behind every stage of a turn."""

from __future__ import annotations

import logging
from datetime import date
from typing import TYPE_CHECKING, Any

from bub_nb.agent.hooks.specs import field_of, hookimpl
from bub_nb.agent.runner import AgentRunner
from bub_nb.agent.state import META_KEYS, turn_state
from bub_nb.memory.cache import memory_of
from bub_nb.tape import tapes_home
from bub_nb.tape.stores.resolve import file_store

if TYPE_CHECKING:
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


class BuiltinPlugin(AgentRunner):
    """Defaults for every hook: a tape per session, the agent loop, and the system prompt."""

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
        turn = turn_state(state)
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
