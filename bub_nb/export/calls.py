"""One turn's model calls and tool calls as ``chat`` and ``execute_tool`` spans, read entry by entry."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bub_nb.export import genai as g
from bub_nb.export.marks import mark_event
from bub_nb.export.messages import (
    input_message,
    mapping,
    output_message,
    system_parts,
    text_of,
    to_json,
    tool_arguments,
)
from bub_nb.export.records import AttributeValue, SpanEvent, SpanRecord
from bub_nb.export.turns import TapeTurn, is_mark
from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.events import LOOP_STEP


@dataclass
class TurnCalls:
    """The ``chat`` and ``execute_tool`` spans of one turn, built while its entries are read in order."""

    tape: str
    turn: TapeTurn
    summarized: frozenset[int]
    content: bool
    provider: str
    model: str
    trace: int
    root: int
    boundary: int
    boundary_id: int
    view_anchor: int | None
    compacted: bool
    spans: list[SpanRecord] = field(default_factory=list)
    tools: list[dict[str, Any]] = field(default_factory=list)
    """The calls of the last ``tool_call`` entry, in order (a model may repeat or omit call ids)."""
    messages: list[dict[str, Any]] = field(default_factory=list)
    system: str | None = None
    failed: TapeEntry | None = None

    def chat(self, response: TapeEntry, finish: str, output: dict[str, Any] | None, error: str | None = None) -> None:
        attributes: dict[str, AttributeValue] = {
            g.OPERATION: g.CHAT,
            g.PROVIDER: self.provider,
            g.CONVERSATION: self.tape,
            g.REQUEST_MODEL: self.model,
            g.FINISH_REASONS: (finish,),
            "bub.entry.id": response.id,
        }
        if error is None:
            attributes[g.RESPONSE_MODEL] = self.model
        else:
            attributes[g.ERROR_TYPE] = error
        if self.compacted and self.view_anchor is not None and self.boundary_id > self.view_anchor:
            attributes[g.COMPACTED] = True
        if self.content:
            attributes[g.INPUT_MESSAGES] = to_json(self.messages)
            if self.system is not None:
                attributes[g.SYSTEM_INSTRUCTIONS] = to_json(system_parts(self.system))
            if output is not None:
                attributes[g.OUTPUT_MESSAGES] = to_json([{**output, "finish_reason": finish}])
        end = g.nanos(response.date, self.boundary)
        self.spans.append(
            SpanRecord(
                self.trace,
                g.span_id(self.tape, response.id, g.CHAT),
                self.root,
                f"{g.CHAT} {self.model}",
                "client",
                min(self.boundary, end),
                end,
                attributes,
                error=error,
            )
        )
        self.boundary, self.boundary_id = end, response.id

    def tool_calls(self, entry: TapeEntry) -> None:
        calls = [c for c in entry.payload.get("calls") or [] if isinstance(c, Mapping)]
        output = output_message(entry.payload.get("content"), calls)
        self.chat(entry, "tool_calls", output)
        self.messages.append(output)
        start = g.nanos(entry.date, self.boundary)
        for index, call in enumerate(calls):
            function = mapping(call.get("function"))
            name = str(function.get("name", ""))
            call_id = str(call.get("id", ""))
            attributes: dict[str, AttributeValue] = {
                g.OPERATION: g.EXECUTE_TOOL,
                g.TOOL_NAME: name,
                g.TOOL_CALL_ID: call_id,
                g.TOOL_TYPE: "function",
                g.CONVERSATION: self.tape,
            }
            if self.content:
                attributes[g.TOOL_ARGUMENTS] = to_json(tool_arguments(function.get("arguments")))
            span_id = g.span_id(self.tape, entry.id, g.EXECUTE_TOOL, index)
            self.tools.append(
                {
                    "id": span_id,
                    "call_id": call_id,
                    "name": name,
                    "start": start,
                    "attributes": attributes,
                    "error": None,
                }
            )

    def tool_results(self, entry: TapeEntry) -> None:
        results = entry.payload.get("results") or []
        end = g.nanos(entry.date, self.boundary)
        for index, tool in enumerate(self.tools):
            if "end" in tool:
                continue
            tool["end"] = end
            result = results[index] if isinstance(results, list) and index < len(results) else None
            if isinstance(result, Mapping) and "kind" in result and "message" in result:
                tool["error"] = str(result["kind"])
            if self.content:
                tool["attributes"][g.TOOL_RESULT] = to_json(result)
            response = {"type": "tool_call_response", "id": tool["call_id"], "response": result}
            self.messages.append(input_message("tool", [response]))
        self.boundary, self.boundary_id = max(self.boundary, end), entry.id

    def tool_error(self, entry: TapeEntry) -> None:
        details = entry.payload.get("details")
        call_id = details.get("call_id") if isinstance(details, Mapping) else None
        named = [tool for tool in self.tools if call_id is not None and tool["call_id"] == str(call_id)]
        # With ids repeated, the entry belongs to the call whose result was an error and no entry named yet.
        failed = [tool for tool in named if tool["error"] is not None and not tool.get("named")]
        for tool in (failed or [tool for tool in named if tool["error"] is None])[:1]:
            tool["error"], tool["named"] = str(entry.payload.get("kind")), True

    def close_tools(self) -> None:
        for tool in self.tools:
            attributes = dict(tool["attributes"])
            if tool["error"] is not None:
                attributes[g.ERROR_TYPE] = tool["error"]
            end = tool.get("end", tool["start"])
            self.spans.append(
                SpanRecord(
                    self.trace,
                    tool["id"],
                    self.root,
                    f"{g.EXECUTE_TOOL} {tool['name']}",
                    "internal",
                    tool["start"],
                    max(end, tool["start"]),
                    attributes,
                    error=tool["error"],
                )
            )
        self.tools = []


def read_entry(state: TurnCalls, entry: TapeEntry, events: list[SpanEvent]) -> None:
    kind, payload = entry.kind, entry.payload
    if is_mark(entry):
        events.append(mark_event(entry, state.summarized, state.content, state.boundary))
    elif kind == "system":
        state.system = str(payload.get("content", ""))
    elif kind == "message" and payload.get("role") == "user":
        state.boundary, state.boundary_id = g.nanos(entry.date, state.boundary), entry.id
        state.messages.append(input_message("user", [{"type": "text", "content": text_of(payload.get("content"))}]))
    elif kind == "message" and payload.get("role") == "assistant":
        failed, state.failed = state.failed, None
        output = output_message(payload.get("content"), [])
        if failed is not None or entry.meta.get("partial"):
            kind_of = str(failed.payload.get("kind")) if failed is not None else "interrupted"
            state.chat(entry, "error", output, kind_of)
        else:
            state.chat(entry, "stop", output)
    elif kind == "tool_call":
        state.close_tools()
        state.tool_calls(entry)
    elif kind == "tool_result":
        state.tool_results(entry)
    elif kind == "error":
        if str(payload.get("kind", "")).startswith("tool."):
            state.tool_error(entry)
        else:
            state.failed = entry
    elif kind == "event" and payload.get("name") == LOOP_STEP:
        data = payload.get("data")
        if isinstance(data, Mapping) and data.get("status") == "auto_handoff":
            state.chat(entry, "error", None, "context_length_exceeded")
