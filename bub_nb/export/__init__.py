"""Tapes in the field's standards: OpenTelemetry GenAI spans and ATIF trajectories, projected deterministically."""

from __future__ import annotations

from bub_nb.export.atif import ATIF_VERSION, atif
from bub_nb.export.genai import SEMCONV_VERSION
from bub_nb.export.otlp import OtelExport, otel
from bub_nb.export.records import SpanEvent, SpanProjection, SpanRecord
from bub_nb.export.spans import tape_spans, turn_spans
from bub_nb.export.turns import TapeTurn, split_turns

__all__ = [
    "ATIF_VERSION",
    "SEMCONV_VERSION",
    "OtelExport",
    "SpanEvent",
    "SpanProjection",
    "SpanRecord",
    "TapeTurn",
    "atif",
    "otel",
    "split_turns",
    "tape_spans",
    "turn_spans",
]
