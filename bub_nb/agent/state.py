"""The turn state: the keys the builtin plugin reads and writes on the state dict every hook shares.

Plugins may add keys of their own; these are the ones the builtin plugin, :class:`~bub_nb.agent.Agent`
and the notebook agree on.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

if TYPE_CHECKING:
    from bub_nb.agent.tools import ToolRegistry
    from bub_nb.agent.turn import Turn
    from bub_nb.memory import MemorySnapshot
    from bub_nb.tape import Tape


class TurnAgent(Protocol):
    """What the builtin hooks need of the agent that runs a turn (:class:`~bub_nb.agent.Agent` is one)."""

    tape: Tape
    instructions: str | None
    last_turn: Turn | None

    def model_stage(self, prompt: str, *, stream: bool, commands: bool = ...) -> AsyncGenerator[str, None]: ...


class TurnState(TypedDict, total=False):
    """The builtin keys of a turn's state."""

    session_id: str
    tape: Tape
    agent: TurnAgent
    instructions: str | None
    tools: ToolRegistry
    memory: MemorySnapshot
    turn: Turn | None
    commands: bool
    """``False`` when the prompt is text a program made (a notebook's ``{name}`` filled in): a leading ``,`` is
    then part of the prompt, never a command. Only text a person typed may run a command."""


#: The keys an inbound envelope's ``meta`` may hand to the turn state.
META_KEYS: tuple[str, ...] = ("tape", "agent", "instructions", "commands")


def turn_state(state: dict[str, Any]) -> TurnState:
    """The state dict as the builtin keys see it (the same dict, typed)."""
    return state  # type: ignore[return-value]
