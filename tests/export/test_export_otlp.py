"""The spans as the OpenTelemetry SDK makes and encodes them: the projection's ids and times, on the OTLP wire."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from bub_nb.agent import Agent, BuiltinPlugin, Envelope, ScriptedModel, TurnPipeline
from bub_nb.agent.live_export import PLUGIN_NAME, LiveExport, switch_live_export
from bub_nb.errors import ExportError
from bub_nb.export import SEMCONV_VERSION, otel, tape_spans
from bub_nb.export.otlp import CONTENT_VARIABLE, send, traces_url
from bub_nb.tape import Tape, TapeEntry


class Receiver(BaseHTTPRequestHandler):
    """An OTLP/HTTP protobuf endpoint that decodes each request with opentelemetry-proto."""

    requests: ClassVar[list[ExportTraceServiceRequest]] = []
    status: ClassVar[int] = 200

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        type(self).requests.append(request)
        self.send_response(type(self).status)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()
        self.wfile.write(b"")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[tuple[str, type[Receiver]]]:
    handler = type("Handler", (Receiver,), {"requests": [], "status": 200})
    server = HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}", handler
    server.shutdown()
    server.server_close()


def two_turns(tape: Tape) -> None:
    def add(a: int, b: int) -> int:
        """Add two whole numbers."""
        return a + b

    model = ScriptedModel([{"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}]}, "3"])
    Agent(tape, model=model, tools=[add]).run("Add")
    Agent(tape, model="offline").run("Thanks")


def test_the_sdk_spans_carry_the_projections_ids_times_and_status(tape: Tape) -> None:
    two_turns(tape)
    memory = InMemorySpanExporter()
    result = otel(tape, exporter=memory)
    records = tape_spans(tape.name, tape.read()).spans
    spans = memory.get_finished_spans()

    assert (result.turns, result.spans, len(spans)) == (2, 6, 6)
    for record, span in zip(records, spans, strict=True):
        assert span.context is not None
        assert (span.context.trace_id, span.context.span_id) == (record.trace_id, record.span_id)
        assert (span.parent.span_id if span.parent else None) == record.parent_id
        assert (span.start_time, span.end_time, span.name) == (record.start_ns, record.end_ns, record.name)
        assert dict(span.attributes or {}) == dict(record.attributes)
        assert span.instrumentation_scope is not None
        assert span.instrumentation_scope.schema_url.endswith(SEMCONV_VERSION)
        assert span.status.status_code is (StatusCode.ERROR if record.error else StatusCode.UNSET)
    assert [s.kind for s in spans[:4]] == [SpanKind.INTERNAL, SpanKind.CLIENT, SpanKind.CLIENT, SpanKind.INTERNAL]
    assert result.trace_ids == tuple(f"{r.trace_id:032x}" for r in records if r.parent_id is None)
    assert spans[0].resource.attributes["service.name"] == "bub_nb"


def test_the_wire_holds_the_same_spans_on_every_export(tape: Tape, receiver: tuple[str, type[Receiver]]) -> None:
    url, handler = receiver
    two_turns(tape)
    otel(tape, url)
    otel(tape, url + "/v1/traces")

    first, second = handler.requests
    assert first == second
    spans = [span for rs in first.resource_spans for ss in rs.scope_spans for span in ss.spans]
    attributes = {kv.key: kv.value for kv in spans[1].attributes}
    assert attributes["gen_ai.operation.name"].string_value == "chat"
    assert attributes["gen_ai.conversation.id"].string_value == tape.name
    (reason,) = attributes["gen_ai.response.finish_reasons"].array_value.values
    assert reason.string_value == "tool_calls"
    root = {kv.key: kv.value for kv in spans[0].attributes}
    assert root["bub.view.mode"].string_value == "last-anchor"


def test_content_follows_the_conventions_opt_in_variable(
    tape: Tape, monkeypatch: pytest.MonkeyPatch, receiver: tuple[str, type[Receiver]]
) -> None:
    two_turns(tape)
    memory = InMemorySpanExporter()
    monkeypatch.setenv(CONTENT_VARIABLE, "true")
    otel(tape, exporter=memory)
    chat = memory.get_finished_spans()[1]
    assert json.loads(str((chat.attributes or {})["gen_ai.input.messages"]))[0]["role"] == "user"
    memory.clear()
    otel(tape, exporter=memory, content=False)
    assert "gen_ai.input.messages" not in (memory.get_finished_spans()[1].attributes or {})


def test_a_receiver_that_refuses_or_is_absent_is_one_error(tape: Tape, receiver: tuple[str, type[Receiver]]) -> None:
    url, handler = receiver
    two_turns(tape)
    handler.status = 400
    with pytest.raises(ExportError, match=r"did not take the spans of tape 'notebook' \(6 spans\)"):
        otel(tape, url)
    with pytest.raises(ExportError, match=r"127\.0\.0\.1:9/v1/traces"):
        otel(tape, "http://127.0.0.1:9", timeout=1)
    for bad in ("ftp://example/v1/traces", "127.0.0.1:4318", ""):
        with pytest.raises(ExportError, match="is not an http"):
            traces_url(bad)


class Failing(SpanExporter):
    def export(self, spans: object) -> SpanExportResult:
        raise ConnectionError("receiver gone")

    def shutdown(self) -> None:
        pass


def test_live_export_never_breaks_a_turn_and_sends_each_turn_once(tape: Tape) -> None:
    pipeline = TurnPipeline(BuiltinPlugin, entry_points=False)
    memory = InMemorySpanExporter()
    live = LiveExport(exporter=memory)
    pipeline.register_plugin(live, name=PLUGIN_NAME)
    agent = Agent(tape, model="offline", pipeline=pipeline)
    for prompt in ("One", "Two", ",help"):
        pipeline.process_inbound_sync(Envelope("notebook", "n.ipynb", prompt, meta={"tape": tape, "agent": agent}))
    assert live.flush(timeout=30)
    assert [r.turns for r in live.exported] == [1, 1], "a comma command is no model turn"
    assert len({s.context.trace_id for s in memory.get_finished_spans() if s.context}) == 2

    broken = LiveExport(exporter=Failing())
    pipeline.register_plugin(broken, name=PLUGIN_NAME)
    result = pipeline.process_inbound_sync(
        Envelope("notebook", "n.ipynb", "Three", meta={"tape": tape, "agent": agent})
    )
    assert broken.flush(timeout=30) and "receiver gone" in broken.failures[0]
    assert result.outbounds and tape.read()[-1].name == "run"


def test_switching_live_export_replaces_or_removes_the_plugin(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    pipeline = TurnPipeline(BuiltinPlugin, entry_points=False)
    plugin = switch_live_export(pipeline, "http://127.0.0.1:4318")
    assert plugin is not None and plugin.endpoint == "http://127.0.0.1:4318/v1/traces"
    assert pipeline.get_plugin(PLUGIN_NAME) is plugin
    assert switch_live_export(pipeline, None) is None and PLUGIN_NAME not in pipeline.plugin_names
    with pytest.raises(ExportError, match="'localhost:4318' is not an http"):
        LiveExport("localhost:4318")


def test_the_command_line_checks_every_name_before_sending(
    tmp_path: Path, receiver: tuple[str, type[Receiver]], capsys: pytest.CaptureFixture[str]
) -> None:
    from bub_nb import open_tape
    from bub_nb.cli import main

    url, handler = receiver
    tape = open_tape("cli-demo", home=tmp_path)
    Agent(tape, model="offline").run("Hi")
    arguments = ["tapes", "export", "--otlp", url, "--home", str(tmp_path)]

    assert main([*arguments, "cli-demo", "cli-typo"]) == 2
    error = capsys.readouterr().err
    assert "cli-typo" in error and handler.requests == [], "nothing is sent before every name is found"
    assert "--new" not in error and "create=True" not in error  # an export reads tapes: no hint to start one
    assert main([*arguments, "--content", "cli-demo"]) == 0
    assert capsys.readouterr().out.startswith("Exported 1 turn of tape 'cli-demo' as 2 spans to " + url)
    (request,) = handler.requests
    chat = request.resource_spans[0].scope_spans[0].spans[1]
    assert "gen_ai.input.messages" in {kv.key for kv in chat.attributes}


class Encoding(SpanExporter):
    """Encodes every batch as the OTLP exporter would put it on the wire."""

    def __init__(self) -> None:
        self.sent = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        encode_spans(spans).SerializeToString()
        self.sent += len(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


HOSTILE_TEXT = st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF) | st.characters(), max_size=6)
HOSTILE_INT = st.integers(min_value=-(2**70), max_value=2**70)


@settings(max_examples=60, deadline=None)
@given(HOSTILE_TEXT, HOSTILE_TEXT, HOSTILE_INT, HOSTILE_INT, st.sampled_from(["0001-01-01", "9999-12-31", "x"]))
def test_whatever_text_integers_and_dates_a_tape_holds_reach_the_wire(
    name: str, text: str, tokens: int, steps: int, date: str
) -> None:
    run = {"status": "ok", "model": name, "usage": {"prompt_tokens": tokens, "completion_tokens": 1}, "steps": steps}
    call = {"id": text, "function": {"name": name, "arguments": text}}
    entries = [
        TapeEntry(1, "anchor", {"name": name, "state": {text: tokens}}, {}, "2026-01-01T00:00:01+00:00"),
        TapeEntry(2, "message", {"role": "user", "content": text}, {"run_id": "r"}, "2026-01-01T00:00:02+00:00"),
        TapeEntry(3, "tool_call", {"calls": [call]}, {"run_id": "r"}, "2026-01-01T00:00:03+00:00"),
        TapeEntry(4, "tool_result", {"results": [text]}, {"run_id": "r"}, date),
        TapeEntry(5, "message", {"role": "assistant", "content": text}, {"run_id": "r"}, "2026-01-01T00:00:05+00:00"),
        TapeEntry(6, "event", {"name": "run", "data": run}, {"run_id": "r"}, "2026-01-01T00:00:06+00:00"),
    ]
    encoding = Encoding()
    send(tape_spans("hostile", entries, content=True).spans, encoding)
    assert encoding.sent == 4


def test_turns_exported_live_are_the_spans_a_whole_tape_export_gives(tape: Tape) -> None:
    pipeline = TurnPipeline(BuiltinPlugin, entry_points=False)
    live_spans = InMemorySpanExporter()
    live = LiveExport(exporter=live_spans)
    pipeline.register_plugin(live, name=PLUGIN_NAME)
    agent = Agent(tape, model="offline", pipeline=pipeline)

    def turn(prompt: str) -> None:
        pipeline.process_inbound_sync(Envelope("notebook", "n.ipynb", prompt, meta={"tape": tape, "agent": agent}))

    turn("One")
    Agent(tape, model=ScriptedModel(['{"summary": "One [#6]"}'])).handoff("phase/two", summarize=True)
    turn("Two")
    turn("Three")
    tape.handoff("phase/three", {"summary": "by hand"})
    turn("Four")
    assert live.flush(timeout=30) and live.failures == []

    whole = InMemorySpanExporter()
    otel(tape, exporter=whole)

    def described(spans: Sequence[ReadableSpan]) -> list[tuple[object, ...]]:
        return [
            (s.context.span_id if s.context else None, s.name, s.start_time, s.end_time, dict(s.attributes or {}),
             [(e.name, e.timestamp, dict(e.attributes or {})) for e in s.events])
            for s in spans
        ]  # fmt: skip

    assert described(live_spans.get_finished_spans()) == described(whole.get_finished_spans())
    compacted = [
        s.name for s in whole.get_finished_spans() if (s.attributes or {}).get("gen_ai.conversation.compacted")
    ]
    assert compacted == ["invoke_agent bub", "chat offline", "invoke_agent bub", "chat offline"]
