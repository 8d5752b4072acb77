"""The spans an export produces, as plain values any OpenTelemetry SDK can be given."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

AttributeValue = str | bool | int | float | tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SpanEvent:
    """A point in a span's time: an anchor, a handoff, a summary."""

    name: str
    time_ns: int
    attributes: Mapping[str, AttributeValue]


@dataclass(frozen=True, slots=True)
class SpanRecord:
    """One span, ready for any OpenTelemetry SDK: ids, parent, name, kind, times, attributes, events, status."""

    trace_id: int
    span_id: int
    parent_id: int | None
    name: str
    kind: str
    """``internal`` (the agent, a tool) or ``client`` (a model call)."""
    start_ns: int
    end_ns: int
    attributes: Mapping[str, AttributeValue]
    events: tuple[SpanEvent, ...] = ()
    error: str | None = None
    """The status description of a span that ended in an error; ``None`` when it did not."""


@dataclass(frozen=True, slots=True)
class SpanProjection:
    """A tape's spans, how many turns they come from, and the entries after the last turn (exported later)."""

    spans: tuple[SpanRecord, ...]
    turns: int
    pending: int
