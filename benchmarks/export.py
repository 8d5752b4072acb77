"""Export figures: a 10k-entry tape to OTLP/HTTP and to ATIF, in spans (or steps) per second.

    python benchmarks/export.py --entries 10000

OTLP: the whole path (projection, SDK spans, protobuf, HTTP) to a receiver on 127.0.0.1 that takes each
request and answers 200, beside the OpenTelemetry SDK exporting as many plain spans (same attribute count)
to the same receiver: the price of the projection. ATIF: the trajectory as JSON text, beside the tape's
entries dumped as JSON (the least any export has to do). Needs the ``otel`` extra.
"""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import orjson
from _common import cache_dir, print_table

from bub_nb.export import atif, otel, tape_spans
from bub_nb.tape import FileTapeStore, Tape, TapeEntry


class _Sink(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def receiver() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def turn_entries(number: int, start: datetime) -> list[TapeEntry]:
    """One turn as the agent writes it: system, prompt, a tool call and result, the answer, the run event."""
    meta = {"run_id": f"run{number:06d}"}
    at = [(start + timedelta(milliseconds=10 * i)).isoformat() for i in range(6)]
    call = {"id": f"call_{number}", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}}
    usage = {"prompt_tokens": 900 + number % 50, "completion_tokens": 40, "total_tokens": 940 + number % 50}
    view = {"mode": "last-anchor", "anchor": 1, "entries": [[1, 1]], "memory_version": None, "system_tokens": 190}
    run = {"status": "ok", "usage": usage, "model": "gpt-4o-mini", "elapsed_ms": 812.5, "steps": 2, "view": view}
    return [
        TapeEntry(0, "system", {"content": "You are Bub."}, meta, at[0]),
        TapeEntry(0, "message", {"role": "user", "content": f"Question {number}"}, meta, at[1]),
        TapeEntry(0, "tool_call", {"calls": [call]}, meta, at[2]),
        TapeEntry(0, "tool_result", {"results": ["3"]}, meta, at[3]),
        TapeEntry(0, "message", {"role": "assistant", "content": f"Answer {number}"}, meta, at[4]),
        TapeEntry(0, "event", {"name": "run", "data": run}, meta, at[5]),
    ]


def build(entries: int, folder: Path) -> Tape:
    """A tape of about ``entries`` entries: turns of six, a handoff every 50 turns (kept between runs)."""
    tape = Tape(f"export-{entries}", FileTapeStore(folder))
    if len(tape) >= entries:
        return tape
    start = datetime(2026, 1, 1, tzinfo=UTC)
    batch: list[TapeEntry] = [TapeEntry.anchor("session/start", {"owner": "human"})]
    number = 0
    while len(tape) + len(batch) < entries:
        if number and number % 50 == 0:
            batch.append(TapeEntry.anchor(f"phase/{number}", {"summary": f"turns up to {number}"}))
        batch.extend(turn_entries(number, start + timedelta(seconds=number)))
        number += 1
        if len(batch) > 5000:
            tape.extend(batch)
            batch = []
    tape.extend(batch)
    return tape


def plain_sdk(url: str, spans: int, attributes: int) -> float:
    """Seconds for the SDK to make ``spans`` plain spans and send them to ``url`` in batches of 512, as export does."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider

    class Finished(SpanProcessor):
        def __init__(self) -> None:
            self.spans: list[ReadableSpan] = []

        def on_end(self, span: ReadableSpan) -> None:
            self.spans.append(span)

    started = time.perf_counter()
    provider = TracerProvider(shutdown_on_exit=False)
    finished = Finished()
    provider.add_span_processor(finished)
    tracer = provider.get_tracer("bench")
    values = {f"key.{i}": i for i in range(attributes)}
    for _ in range(spans):
        tracer.start_span("plain", attributes=values).end()
    exporter = OTLPSpanExporter(endpoint=f"{url}/v1/traces")
    for first in range(0, spans, 512):
        exporter.export(finished.spans[first : first + 512])
    exporter.shutdown()
    return time.perf_counter() - started


def best(call: object, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        call()  # type: ignore[operator]
        times.append(time.perf_counter() - started)
    return min(times)


def rows(entries: int = 10_000, runs: int = 3) -> list[list[str]]:
    tape = build(entries, cache_dir("export"))
    records = tape_spans(tape.name, tape.read()).spans
    count = len(records)
    attributes = round(sum(len(r.attributes) for r in records) / count)
    with receiver() as url:
        exported = best(lambda: otel(tape, url), runs)
        plain = min(plain_sdk(url, count, attributes) for _ in range(runs))
    projected = best(lambda: tape_spans(tape.name, tape.read()), runs)
    steps = len(atif(tape)["steps"])
    trajectory = best(lambda: orjson.dumps(atif(tape)), runs)
    dumped = best(lambda: orjson.dumps([e.to_dict() for e in tape.read()]), runs)
    size = f"{len(tape) // 1000}k-entry tape"
    return [
        [
            f"OTLP export of a {size} ({count} spans)",
            f"{exported:.2f} s, {count / exported:,.0f} spans/s",
            f"{plain:.2f} s, {count / plain:,.0f} spans/s (SDK, plain spans)",
            f"{exported / plain:.1f}x",
            "printed",
        ],
        [
            "  of which the projection (tape_spans)",
            f"{projected:.2f} s, {count / projected:,.0f} spans/s",
            "",
            "",
            "",
        ],
        [
            f"ATIF export of a {size} ({steps} steps)",
            f"{trajectory:.2f} s, {steps / trajectory:,.0f} steps/s",
            f"{dumped:.2f} s (the entries as JSON)",
            f"{trajectory / dumped:.1f}x",
            "printed",
        ],
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=10_000, help="entries in the tape (default 10000)")
    parser.add_argument("--runs", type=int, default=3, help="best of this many runs (default 3)")
    args = parser.parse_args(argv)
    print_table(["figure", "bub_nb", "baseline", "ratio", "target"], rows(args.entries, args.runs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
