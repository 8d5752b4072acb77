"""Send a tape's spans to an OTLP/HTTP endpoint through the OpenTelemetry SDK, with the ids the projection chose."""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

from bub_nb.errors import ExportError
from bub_nb.export.genai import SCHEMA_URL, producer_version
from bub_nb.export.marks import summarized_anchors
from bub_nb.export.records import AttributeValue, SpanRecord
from bub_nb.export.spans import tape_spans
from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.events import run_view

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export import SpanExporter

    from bub_nb.tape import Tape

CONTENT_VARIABLE: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The opt-in the Python GenAI instrumentations read: ``true`` captures messages, arguments and results."""

TRACES_PATH: Final = "/v1/traces"
BATCH: Final = 512


@dataclass(frozen=True, slots=True)
class OtelExport:
    """What an export sent: the tape, its turns and spans, where, and the entries left for a later turn."""

    tape: str
    turns: int
    spans: int
    pending: int
    endpoint: str | None
    trace_ids: tuple[str, ...]
    """One per turn, as 32 hex digits: what a trace viewer shows."""

    def __str__(self) -> str:
        where = f" to {self.endpoint}" if self.endpoint else ""
        left = f"; {self.pending} entries after the last turn wait for the next" if self.pending else ""
        turns = f"{self.turns} turn{'' if self.turns == 1 else 's'}"
        return f"Exported {turns} of tape {self.tape!r} as {self.spans} spans{where}{left}"


def content_opted_in() -> bool:
    return os.environ.get(CONTENT_VARIABLE, "").strip().lower() == "true"


def traces_url(endpoint: str) -> str:
    """An OTLP/HTTP traces URL: a base URL (as ``OTEL_EXPORTER_OTLP_ENDPOINT`` holds) gets ``/v1/traces``."""
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ExportError(f"OTLP endpoint {endpoint!r} is not an http:// or https:// URL")
    if parts.path.rstrip("/").endswith(TRACES_PATH):
        return endpoint
    return endpoint.rstrip("/") + TRACES_PATH


def endpoint_of(endpoint: str | None) -> str:
    """Where the OTLP exporter sends traces: ``endpoint``, else the standard variables, else the default."""
    if endpoint:
        return traces_url(endpoint)
    traces = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    if traces:
        return traces
    return traces_url(os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or "http://localhost:4318")


def otlp_exporter(endpoint: str | None = None, *, timeout: float | None = None) -> SpanExporter:
    """The SDK's OTLP/HTTP protobuf exporter; without ``endpoint`` it reads the standard ``OTEL_EXPORTER_OTLP_*``."""
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError:
        raise ExportError("OTLP export needs the otel extra: pip install -e '.[otel]' in the bub_nb checkout") from None
    return OTLPSpanExporter(endpoint=traces_url(endpoint) if endpoint else None, timeout=timeout)


def otel(
    tape: Tape,
    endpoint: str | None = None,
    *,
    exporter: SpanExporter | None = None,
    content: bool | None = None,
    provider: str | None = None,
    run_ids: Collection[str] | None = None,
    service_name: str = "bub_nb",
    timeout: float | None = None,
    start: int = 1,
) -> OtelExport:
    """Export ``tape``'s turns as OpenTelemetry GenAI spans, one trace per turn (see docs/interop.md).

    The spans go to ``exporter`` when given (any SDK ``SpanExporter``), else over OTLP/HTTP to ``endpoint``
    (a base URL or a ``/v1/traces`` URL; default: the ``OTEL_EXPORTER_OTLP_*`` variables). ``content``
    adds messages, tool arguments and results; by default it follows
    ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``. ``run_ids`` limits the export to those turns;
    ``start`` reads the tape from that entry id on (live export starts after the turn before).
    Ids derive from the tape's name and entry ids, so a second export sends the same spans again.
    """
    entries = tape.read(start)
    projection = tape_spans(
        tape.name,
        entries,
        content=content_opted_in() if content is None else content,
        provider=provider,
        run_ids=run_ids,
        summarized=earlier_summarized_anchors(tape, entries, start),
    )
    own = exporter is None
    target = otlp_exporter(endpoint, timeout=timeout) if exporter is None else exporter
    where = endpoint_of(endpoint) if own else None
    try:
        send(projection.spans, target, service_name=service_name, what=f"tape {tape.name!r}", where=where)
    finally:
        if own:
            target.shutdown()
    traces = tuple(dict.fromkeys(f"{span.trace_id:032x}" for span in projection.spans if span.parent_id is None))
    return OtelExport(tape.name, projection.turns, len(projection.spans), projection.pending, where, traces)


def earlier_summarized_anchors(tape: Tape, entries: Sequence[TapeEntry], start: int) -> frozenset[int]:
    """The anchors before ``start`` that views in ``entries`` start at and a summarizing handoff wrote.

    Only those anchors and the entry before each are read, so a turn exported on its own is marked compacted
    exactly as it is in a whole-tape export.
    """
    found: set[int] = set()
    for entry in entries:
        view = run_view(entry) if entry.kind == "event" else None
        if view is not None and view.anchor is not None and view.anchor < start:
            found |= summarized_anchors(tape.read(max(1, view.anchor - 1), view.anchor + 1))
    return frozenset(found)


def send(
    spans: Sequence[SpanRecord],
    exporter: SpanExporter,
    *,
    service_name: str = "bub_nb",
    what: str = "spans",
    where: str | None = None,
) -> None:
    """Make each record a real SDK span (ids, times, events, status as recorded) and export them in batches."""
    from opentelemetry.sdk.trace.export import SpanExportResult

    finished = sdk_spans(spans, service_name)
    for start in range(0, len(finished), BATCH):
        if exporter.export(finished[start : start + BATCH]) is not SpanExportResult.SUCCESS:
            to = f" at {where}" if where else ""
            raise ExportError(f"The OTLP receiver{to} did not take the spans of {what} ({len(finished)} spans)")


INT64: Final = range(-(2**63), 2**63)


def wire_text(text: str) -> str:
    """``text`` as OTLP can carry it: valid UTF-8, a lone surrogate replaced."""
    if text.isascii():
        return text
    try:
        text.encode()
    except UnicodeEncodeError:
        return text.encode(errors="replace").decode()
    return text


def wire_value(value: AttributeValue) -> AttributeValue:
    """A value OTLP can carry: text as valid UTF-8, an integer beyond 64 bits as its digits."""
    if isinstance(value, str):
        return wire_text(value)
    if isinstance(value, tuple):
        return tuple(wire_text(item) for item in value)
    if isinstance(value, int) and not isinstance(value, bool) and value not in INT64:
        return str(value)
    return value


def wire_time(nanos: int) -> int:
    """A time OTLP can carry (unsigned 64-bit nanoseconds): a date before 1970 or after 2262 is held at the edge."""
    return min(max(nanos, 0), INT64.stop - 1)


def wire_attributes(attributes: Mapping[str, AttributeValue]) -> dict[str, AttributeValue]:
    return {wire_text(key): wire_value(value) for key, value in attributes.items()}


def sdk_spans(spans: Sequence[SpanRecord], service_name: str = "bub_nb") -> list[Any]:
    """The records as finished ``ReadableSpan`` objects of the OpenTelemetry SDK."""
    try:
        from opentelemetry import trace
        from opentelemetry.context import Context
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
        from opentelemetry.sdk.trace.id_generator import IdGenerator
        from opentelemetry.sdk.trace.sampling import ALWAYS_ON
    except ImportError:
        raise ExportError(
            "OpenTelemetry export needs the otel extra: pip install -e '.[otel]' in the bub_nb checkout"
        ) from None

    class PlannedIds(IdGenerator):
        """Hands the SDK the ids the projection derived, one span at a time."""

        trace_id = 0
        span_id = 0

        def generate_trace_id(self) -> int:
            return self.trace_id

        def generate_span_id(self) -> int:
            return self.span_id

    class Finished(SpanProcessor):
        def __init__(self) -> None:
            self.spans: list[ReadableSpan] = []

        def on_end(self, span: ReadableSpan) -> None:
            self.spans.append(span)

    ids = PlannedIds()
    collected = Finished()
    resource = Resource.create({"service.name": service_name})
    provider = TracerProvider(sampler=ALWAYS_ON, resource=resource, id_generator=ids, shutdown_on_exit=False)
    provider.add_span_processor(collected)
    tracer = provider.get_tracer("bub_nb.export", producer_version(), schema_url=SCHEMA_URL)
    kinds = {"internal": trace.SpanKind.INTERNAL, "client": trace.SpanKind.CLIENT}
    for record in spans:
        ids.trace_id, ids.span_id = record.trace_id, record.span_id
        context = Context()
        if record.parent_id is not None:
            parent = trace.SpanContext(
                record.trace_id,
                record.parent_id,
                is_remote=False,
                trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED),
            )
            context = trace.set_span_in_context(trace.NonRecordingSpan(parent))
        span = tracer.start_span(
            wire_text(record.name),
            context,
            kind=kinds[record.kind],
            attributes=wire_attributes(record.attributes),
            start_time=wire_time(record.start_ns),
        )
        for event in record.events:
            span.add_event(wire_text(event.name), wire_attributes(event.attributes), timestamp=wire_time(event.time_ns))
        if record.error is not None:
            span.set_status(trace.Status(trace.StatusCode.ERROR, wire_text(record.error)))
        span.end(end_time=wire_time(record.end_ns))
    provider.shutdown()
    return collected.spans
