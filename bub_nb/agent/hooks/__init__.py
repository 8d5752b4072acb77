"""The turn pipeline's hooks: ``specs`` declares them, ``runtime`` calls them safely."""

from __future__ import annotations

from bub_nb.agent.hooks.runtime import HookRuntime
from bub_nb.agent.hooks.specs import (
    PROJECT,
    Envelope,
    Outbound,
    Prompt,
    State,
    StreamEvent,
    TurnSpecs,
    hookimpl,
    hookspec,
)

__all__ = [
    "PROJECT",
    "Envelope",
    "HookRuntime",
    "Outbound",
    "Prompt",
    "State",
    "StreamEvent",
    "TurnSpecs",
    "hookimpl",
    "hookspec",
]
