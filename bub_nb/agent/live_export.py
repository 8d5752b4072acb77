"""Live export: a plugin that sends each turn to an OTLP receiver as it ends, the spans ``export.otel`` sends.

On when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set (the shared pipeline registers it as it is made) or when
``%config BubMagics.otlp_endpoint`` names an endpoint. Sending happens on one background thread, in turn
order, so a slow or absent receiver never holds up a cell; a failure is logged, never raised into the turn.
"""

from __future__ import annotations

import logging
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Any, Final

from bub_nb.agent.hooks.specs import hookimpl
from bub_nb.agent.state import turn_state
from bub_nb.export.otlp import OtelExport, otel, otlp_exporter, traces_url
from bub_nb.tape.events import RUN

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export import SpanExporter

    from bub_nb.agent.framework import TurnPipeline
    from bub_nb.tape import Tape

logger = logging.getLogger("bub_nb")

ENDPOINT_VARIABLE: Final = "OTEL_EXPORTER_OTLP_ENDPOINT"
PLUGIN_NAME: Final = "otel-live"


class LiveExport:
    """Exports every turn that ends in the pipeline as one trace, in the background and in order.

    ``endpoint`` is an OTLP/HTTP URL (default: the ``OTEL_EXPORTER_OTLP_*`` variables); ``exporter`` any SDK
    ``SpanExporter`` instead. ``exported`` lists what was sent, ``failures`` what could not be.
    """

    def __init__(
        self,
        endpoint: str | None = None,
        *,
        exporter: SpanExporter | None = None,
        content: bool | None = None,
        timeout: float = 10.0,
    ) -> None:
        self.endpoint = traces_url(endpoint) if endpoint else None  # a bad URL is refused now, not at the first turn
        self.content = content
        self.timeout = timeout
        self._exporter = exporter
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bub_nb-otel")
        self._sent: list[Future[None]] = []
        self._lock = threading.Lock()
        self._starts: dict[tuple[int, str], int] = {}
        """Per tape (its store and name), the entry after the last turn sent."""
        self.exported: list[OtelExport] = []
        self.failures: list[str] = []

    def __repr__(self) -> str:
        return f"LiveExport(endpoint={self.endpoint!r}, exported={len(self.exported)}, failures={len(self.failures)})"

    @hookimpl
    def save_state(self, state: dict[str, Any]) -> None:
        turn_data = turn_state(state)
        turn = turn_data.get("turn")
        agent = turn_data.get("agent")
        tape = turn_data.get("tape") or (agent.tape if agent is not None else None)
        if turn is None or tape is None or not turn.run_id:  # a comma command is no model turn
            return
        ids = [entry.id for entry in turn.entries] or [tape.last_id]
        with self._lock:
            self._sent = [future for future in self._sent if not future.done()]
            self._sent.append(self._worker.submit(self._send, tape, turn.run_id, min(ids), max(ids)))

    def _start(self, tape: Tape, first: int) -> int:
        """Where the turn's part of the tape begins: after the turn before it, so its anchors come along."""
        known = self._starts.get((id(tape.store), tape.name))
        if known is not None and known <= first:
            return known
        for entry in tape.iter_reverse():
            if entry.id < first and entry.kind == "event" and entry.name == RUN:
                return entry.id + 1
        return 1

    def _send(self, tape: Tape, run_id: str, first: int, last: int) -> None:
        try:
            if self._exporter is None:
                self._exporter = otlp_exporter(self.endpoint, timeout=self.timeout)
            start = self._start(tape, first)
            result = otel(tape, exporter=self._exporter, content=self.content, run_ids={run_id}, start=start)
            self._starts[(id(tape.store), tape.name)] = last + 1
        except Exception as exc:  # a receiver's failure must not reach the notebook's turn
            message = f"turn {run_id} of tape {tape.name!r}: {exc}"
            logger.warning("bub_nb could not export %s", message)
            self.failures.append(message)
            return
        self.exported.append(result)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every turn handed over so far is sent (or failed); ``False`` if ``timeout`` ran out."""
        with self._lock:
            pending = list(self._sent)
        return not wait(pending, timeout=timeout).not_done

    def close(self) -> None:
        self._worker.shutdown(wait=True)
        if self._exporter is not None:
            self._exporter.shutdown()


def register_from_environment(pipeline: TurnPipeline) -> None:
    """Register live export on ``pipeline`` when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set."""
    if os.environ.get(ENDPOINT_VARIABLE, "").strip():
        pipeline.register_plugin(LiveExport(), name=PLUGIN_NAME)


def switch_live_export(pipeline: TurnPipeline, endpoint: str | None) -> LiveExport | None:
    """Export to ``endpoint`` from now on; with none, go back to what the environment says (on or off)."""
    old = pipeline.get_plugin(PLUGIN_NAME)
    if old is not None:
        pipeline.unregister_plugin(PLUGIN_NAME)
        if isinstance(old, LiveExport):
            old.close()  # what it was still sending goes out first
    if endpoint:
        plugin = LiveExport(endpoint)
        pipeline.register_plugin(plugin, name=PLUGIN_NAME)
        return plugin
    register_from_environment(pipeline)
    return None
