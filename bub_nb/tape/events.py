"""The events bub_nb writes on a tape: their names, and the shapes more than one module reads or builds.

A ``run`` event closes every turn: ``{"status", "usage", "model", "elapsed_ms", "steps", "view"}``, where
``usage`` is the model's own token count (``prompt_tokens``, ``completion_tokens``, ``total_tokens``, and
every other count the endpoint gave, such as ``prompt_tokens_details.cached_tokens``) or ``None``. A handoff is
an anchor followed by a ``handoff`` event that records it.

``view`` records what the turn's last model call was sent, so the request can be rebuilt later::

    {"mode": "last-anchor",          # the view mode's label
     "anchor": 12,                   # id of the anchor the view starts at, or null
     "entries": [[12, 14], [17, 17]],# the entries rendered into messages, as inclusive [first, last] id ranges
     "memory_version": 3,            # the memory zone version the system prompt carried, or null
     "system_tokens": 412}           # the system prompt's token estimate

The system prompt itself is the turn's ``system`` entry (same ``run_id``). Run events written before
``view`` existed, or by Bub, have no ``view``; they stay valid, only their request cannot be rebuilt.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from bub_nb.errors import PromptTooLongError
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
"""A summarizing handoff's model calls, written just before its anchor: ``{"anchor", "model", "range", "parts",
"requests", "usage"}``. Like every event it never enters a view; its ``usage`` shows in frames."""

PROMPT_TOO_LONG: Final = PromptTooLongError.kind
"""The ``kind`` of the ``error`` a turn ends with when its own prompt is over the model's window, learnt only
once the endpoint refused it: the prompt stays on the tape, and views leave it out from then on."""

CONTEXT_HANDOFF: Final = "context_handoff"
"""A handoff between agents (seed 002 §9.2), on both agents' tapes after the anchor whose state carries it under
the same key: ``{"type", "from", "to", "timestamp", "content"}`` (``bub_nb.agent.team.agent_handoff`` has the shape)."""

AGENT: Final = "agent"
"""An agent of the notebook, defined on the notebook's own tape: ``{"name", "model", "instructions", "tools",
"context"}``, the settings it runs with (``None``: the notebook's). It, or a ``context_handoff`` event on
``<tape>~<name>``, is what makes a tape so named an agent's; a kernel that starts later finds its agents here."""

HANDOFF_FAILED: Final = "context_handoff.failed"
"""A handoff between agents whose receiver's half could not be written: ``{"anchor", "to", "error"}``."""

RETRACT: Final = "retract"
"""Takes entries out of every view from here on: ``{"ids": [[first, last], ...], "asked": "5-7", "reason"}``. The
entries stay on the tape; a view built before the event (a past turn's) is unchanged."""

UNRETRACT: Final = "unretract"
"""Brings retracted entries back into views from here on; its data has the shape of ``retract``'s."""

REDACT: Final = "redact"
"""Records a redaction, the one rewrite: ``{"ids", "by", "copies", "database"}`` for entries named by id, and
``{"text", "length", "ids", "by"}`` (``text`` is the marker) on each tape a redaction by value rewrote (see
``bub_nb.tape.corrections``)."""

EXPORT: Final = "export"
"""The tape was written out to a file: ``{"path", "format"}``, so a redaction can name the copies it cannot reach."""

EXERCISE_CHECK: Final = "exercise.check"
"""One attempt at a named exercise: ``{"exercise", "passed", "done", "problems"?}`` (see ``bub_nb.check``)."""

WRITTEN_BY: Final = ("run_id", "source", "forked_from", "forked_at")
"""The meta keys an entry written by a turn, a magic or a fork carries: an entry with none was appended by hand."""

USAGE_EVENTS: Final = (RUN, SUMMARY)
"""The events whose ``data.usage`` is what a model call cost."""


def written_by_hand(entry: TapeEntry) -> bool:
    """Whether no turn, magic or fork wrote ``entry`` (``tape.append_message`` from a cell, say)."""
    return not any(key in entry.meta for key in WRITTEN_BY)


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


@dataclass(frozen=True, slots=True)
class RecordedView:
    """The ``view`` a run event recorded (see the module docstring for its shape on the tape)."""

    mode: str
    anchor: int | None
    entry_ids: tuple[int, ...]
    memory_version: int | None
    system_tokens: int

    def as_data(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "anchor": self.anchor,
            "entries": id_ranges(self.entry_ids),
            "memory_version": self.memory_version,
            "system_tokens": self.system_tokens,
        }


def id_ranges(ids: Iterable[int]) -> list[list[int]]:
    """Entry ids as inclusive ``[first, last]`` ranges of consecutive ids: ``[1,2,3,7]`` → ``[[1,3],[7,7]]``."""
    ranges: list[list[int]] = []
    for entry_id in ids:
        if ranges and entry_id == ranges[-1][1] + 1:
            ranges[-1][1] = entry_id
        else:
            ranges.append([entry_id, entry_id])
    return ranges


def range_ids(ranges: Any) -> tuple[int, ...] | None:
    """The ids of :func:`id_ranges`' ranges; ``None`` when ``ranges`` is not that shape."""
    if not isinstance(ranges, list):
        return None
    ids: list[int] = []
    for pair in ranges:
        if not (isinstance(pair, list) and len(pair) == 2 and all(type(i) is int for i in pair)):
            return None
        first, last = pair
        if first < 1 or last < first or (ids and first <= ids[-1]):
            return None
        ids.extend(range(first, last + 1))
    return tuple(ids)


def retracted_ids(entries: Iterable[TapeEntry]) -> frozenset[int]:
    """The ids that the ``retract`` and ``unretract`` events among ``entries`` leave retracted, in tape order."""
    retracted: set[int] = set()
    for entry in entries:
        if entry.kind != "event" or entry.payload.get("name") not in (RETRACT, UNRETRACT):
            continue
        data = entry.payload.get("data")
        ids = range_ids(data.get("ids")) if isinstance(data, dict) else None
        if ids is not None:
            (retracted.update if entry.payload["name"] == RETRACT else retracted.difference_update)(ids)
    return frozenset(retracted)


def run_view(entry: TapeEntry) -> RecordedView | None:
    """The view a ``run`` event recorded; ``None`` for any other entry, or a run without a well-formed view."""
    data = run_data(entry)
    view = data.get("view") if data is not None else None
    if not isinstance(view, dict):
        return None
    mode, anchor, memory, tokens = (view.get(k) for k in ("mode", "anchor", "memory_version", "system_tokens"))
    ids = range_ids(view.get("entries"))
    if ids is None or not isinstance(mode, str) or type(tokens) is not int:
        return None
    if not (anchor is None or type(anchor) is int) or not (memory is None or type(memory) is int):
        return None
    return RecordedView(mode, anchor, ids, memory, tokens)
