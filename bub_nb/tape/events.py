"""The events bub_nb writes on a tape: their names, and the shapes more than one module reads or builds.

A ``run`` event closes every turn: ``{"status", "usage", "model", "elapsed_ms", "steps"}``, where
``usage`` is the model's own token count (``prompt_tokens``, ``completion_tokens``, ``total_tokens``)
or ``None``. A handoff is an anchor followed by a ``handoff`` event that records it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from bub_nb.tape.entries import TapeEntry

RUN: Final = "run"
"""Closes a turn: its status, the model's token usage, the model, the time and the steps."""

HANDOFF: Final = "handoff"
"""Records the anchor written just before it: ``{"name", "state"}``."""

NOTEBOOK: Final = "notebook"
"""The notebook that writes the tape: ``{"path", "source"}``."""

NOTEBOOK_CELL: Final = "notebook.cell"
"""An executed code cell, while recording is on."""

COMMAND: Final = "command"
"""A ``,command`` run in place of a model turn."""

LOOP_STEP: Final = "loop.step"
"""A step of the agent loop worth keeping, such as an automatic handoff."""

SUMMARY: Final = "summary"
"""A summarising handoff's model calls, written just before its anchor: ``{"anchor", "model", "range", "parts",
"requests", "usage"}``. Like every event it never enters a view; its ``usage`` shows in frames."""

USAGE_EVENTS: Final = (RUN, SUMMARY)
"""The events whose ``data.usage`` is what a model call cost."""


def run_data(entry: TapeEntry) -> dict[str, Any] | None:
    """The data of a ``run`` event; ``None`` for any other entry or a run event without an object."""
    if entry.kind != "event" or entry.payload.get("name") != RUN:
        return None
    data = entry.payload.get("data")
    return data if isinstance(data, dict) else None


def payload_event_usage(kind: str, payload: Mapping[str, Any]) -> dict[str, Any] | None:
    """The token usage a ``run`` or ``summary`` event reports; ``None`` for any other entry or no usage."""
    if kind != "event" or payload.get("name") not in USAGE_EVENTS:
        return None
    data = payload.get("data")
    usage = data.get("usage") if isinstance(data, dict) else None
    return usage if isinstance(usage, dict) else None


def payload_run_usage(kind: str, payload: Mapping[str, Any]) -> dict[str, Any] | None:
    """``run_usage`` for a kind and payload, without building the entry."""
    if kind != "event" or payload.get("name") != RUN:
        return None
    data = payload.get("data")
    usage = data.get("usage") if isinstance(data, dict) else None
    return usage if isinstance(usage, dict) else None


def run_usage(entry: TapeEntry) -> dict[str, Any] | None:
    """The token usage a ``run`` event reports, as written; ``None`` for any other entry or no usage."""
    return payload_run_usage(entry.kind, entry.payload)


def handoff_entries(name: str, state: Mapping[str, Any] | None = None, **meta: Any) -> list[TapeEntry]:
    """The anchor ``name`` carrying ``state``, then the ``handoff`` event recording it (both with ``meta``)."""
    state_dict = dict(state) if state is not None else None
    return [
        TapeEntry.anchor(name, state_dict, **meta),
        TapeEntry.event(HANDOFF, {"name": name, "state": state_dict}, **meta),
    ]
