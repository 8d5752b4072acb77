"""A tape projected onto OpenTelemetry GenAI spans: turns, model and tool calls, usage, marks, failures, ids."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bub_nb
from bub_nb.agent import Agent, ScriptedModel
from bub_nb.errors import ContextLengthError, ModelError
from bub_nb.export import SpanRecord, split_turns, tape_spans
from bub_nb.export import genai as g
from bub_nb.tape import Tape, TapeEntry
from bub_nb.tape.events import run_usage


def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


def boom(x: int) -> int:
    """Always fails."""
    raise ValueError(f"no {x}")


def usage(prompt: int, completion: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion}


def tool_turn(tape: Tape) -> None:
    replies = [
        {"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}, {"name": "boom", "arguments": {"x": 3}}]},
        {"content": "3", "usage": usage(20, 2)},
    ]
    replies[0]["usage"] = usage(10, 5)
    Agent(tape, model=ScriptedModel(replies), tools=[add, boom]).run("Add 1 and 2, then fail")


def by_operation(spans: tuple[SpanRecord, ...] | list[SpanRecord], operation: str) -> list[SpanRecord]:
    return [span for span in spans if span.attributes[g.OPERATION] == operation]


def test_a_turn_is_an_agent_span_over_a_chat_span_per_model_call_and_a_tool_span_per_call(tape: Tape) -> None:
    tool_turn(tape)
    spans = tape_spans(tape.name, tape.read()).spans

    (root,) = by_operation(spans, g.INVOKE_AGENT)
    chats, tools = by_operation(spans, g.CHAT), by_operation(spans, g.EXECUTE_TOOL)
    assert (root.name, root.kind, root.parent_id) == ("invoke_agent bub", "internal", None)
    assert [c.attributes[g.FINISH_REASONS] for c in chats] == [("tool_calls",), ("stop",)]
    assert {c.kind for c in chats} == {"client"} and {t.kind for t in tools} == {"internal"}
    assert [t.name for t in tools] == ["execute_tool add", "execute_tool boom"]
    assert [t.attributes[g.TOOL_CALL_ID] for t in tools] == ["call_1_1", "call_1_2"]
    assert [t.error for t in tools] == [None, "tool.tool"] and tools[1].attributes[g.ERROR_TYPE] == "tool.tool"
    for span in (*chats, *tools):
        assert (span.trace_id, span.parent_id) == (root.trace_id, root.span_id)
        assert root.start_ns <= span.start_ns <= span.end_ns <= root.end_ns
    assert len({span.span_id for span in spans}) == len(spans)
    for span in spans:
        assert span.attributes[g.CONVERSATION] == tape.name


def test_the_turns_usage_sits_once_on_the_call_that_answered(tape: Tape) -> None:
    tool_turn(tape)
    spans = tape_spans(tape.name, tape.read()).spans
    (run,) = [u for u in map(run_usage, tape.read()) if u is not None]

    chats = by_operation(spans, g.CHAT)
    assert g.INPUT_TOKENS not in chats[0].attributes
    assert (chats[1].attributes[g.INPUT_TOKENS], chats[1].attributes[g.OUTPUT_TOKENS]) == (30, 7)
    assert (run["prompt_tokens"], run["completion_tokens"]) == (30, 7)
    assert chats[1].attributes["bub.usage.model_calls"] == 2
    (root,) = by_operation(spans, g.INVOKE_AGENT)
    assert g.INPUT_TOKENS not in root.attributes, "a sum over all spans must not count the turn twice"
    assert (root.attributes["bub.run.usage.input_tokens"], root.attributes["bub.run.usage.output_tokens"]) == (30, 7)


def test_provider_and_model_come_from_the_run_event() -> None:
    assert g.provider_and_model("offline") == ("bub_nb", "offline")
    assert g.provider_and_model("openai:gpt-4o-mini") == ("openai", "gpt-4o-mini")
    assert g.provider_and_model("gpt-4o-mini") == ("openai", "gpt-4o-mini")
    assert g.provider_and_model("claude-sonnet-4-5-20250929") == ("anthropic", "claude-sonnet-4-5-20250929")


def test_cached_prompt_tokens_from_either_usage_shape_become_cache_reads() -> None:
    from bub_nb.export.spans import usage_attributes

    nested = {"prompt_tokens": 100, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 64}}
    flat = {"input_tokens": 100, "output_tokens": 5, "cache_read_input_tokens": 64}
    for shape in (nested, flat):
        assert usage_attributes(shape) == {g.INPUT_TOKENS: 100, g.OUTPUT_TOKENS: 5, g.CACHE_READ_TOKENS: 64}
    assert usage_attributes(None) == {} and usage_attributes({"prompt_tokens": "many"}) == {}


def test_the_view_mode_and_memory_version_are_bub_facts(tape: Tape) -> None:
    Agent(tape, model="offline").run("Hi")
    (root, _chat) = tape_spans(tape.name, tape.read()).spans
    assert root.attributes["bub.view.mode"] == "last-anchor"
    assert root.attributes["bub.view.anchor"] == 1 and root.attributes["bub.memory.version"] == 1
    assert root.attributes["bub.run.status"] == "ok" and root.attributes[g.PROVIDER] == "bub_nb"


def test_content_is_exported_only_when_asked_for(tape: Tape) -> None:
    tool_turn(tape)
    content_keys = {g.INPUT_MESSAGES, g.OUTPUT_MESSAGES, g.SYSTEM_INSTRUCTIONS, g.TOOL_ARGUMENTS, g.TOOL_RESULT}
    plain = tape_spans(tape.name, tape.read()).spans
    assert not any(content_keys & set(span.attributes) for span in plain)
    assert not any("bub.anchor.state" in e.attributes for span in plain for e in span.events)

    full = tape_spans(tape.name, tape.read(), content=True).spans
    first, last = by_operation(full, g.CHAT)
    assert json.loads(str(first.attributes[g.INPUT_MESSAGES])) == [
        {"role": "user", "parts": [{"type": "text", "content": "Add 1 and 2, then fail"}]}
    ]
    calls = json.loads(str(first.attributes[g.OUTPUT_MESSAGES]))[0]
    assert calls["finish_reason"] == "tool_calls"
    assert [part["arguments"] for part in calls["parts"]] == [{"a": 1, "b": 2}, {"x": 3}]
    sent = json.loads(str(last.attributes[g.INPUT_MESSAGES]))
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "tool"]
    assert sent[2]["parts"][0] == {"type": "tool_call_response", "id": "call_1_1", "response": "3"}
    assert json.loads(str(last.attributes[g.OUTPUT_MESSAGES]))[0]["parts"] == [{"type": "text", "content": "3"}]
    assert "You are Bub" in json.loads(str(last.attributes[g.SYSTEM_INSTRUCTIONS]))[0]["content"]
    add_span = by_operation(full, g.EXECUTE_TOOL)[0]
    assert (add_span.attributes[g.TOOL_ARGUMENTS], add_span.attributes[g.TOOL_RESULT]) == ('{"a":1,"b":2}', '"3"')


def test_anchors_between_turns_are_events_of_the_next_turn_and_a_summary_marks_compaction(tape: Tape) -> None:
    Agent(tape, model="offline").run("First phase")
    Agent(tape, model=ScriptedModel(['{"summary": "first phase [#6]"}'])).handoff("phase/two", summarize=True)
    Agent(tape, model="offline").run("Second phase")

    first_root, first_chat, second_root, second_chat = tape_spans(tape.name, tape.read()).spans
    assert [e.name for e in second_root.events] == ["bub.summary", "bub.anchor", "bub.handoff"]
    summary, anchor, handoff = second_root.events
    assert anchor.attributes["bub.anchor.name"] == "phase/two" and anchor.attributes["bub.anchor.summarized"] is True
    assert handoff.attributes[g.COMPACTED] is True
    assert summary.attributes["bub.summary.model"] == "scripted"
    assert anchor.time_ns <= second_root.start_ns, "an event keeps its own entry's time"
    assert g.COMPACTED not in first_chat.attributes
    assert second_chat.attributes[g.COMPACTED] is True and second_root.attributes[g.COMPACTED] is True
    # session/start and its handoff; the memory zone's bounds are events of the zone, not phase anchors
    assert [e.name for e in first_root.events] == ["bub.anchor", "bub.handoff"]


def test_a_plain_handoff_is_no_compaction(tape: Tape) -> None:
    Agent(tape, model="offline").run("One")
    tape.handoff("phase/two", {"summary": "written by hand"})
    Agent(tape, model="offline").run("Two")
    spans = tape_spans(tape.name, tape.read()).spans
    assert not any(g.COMPACTED in span.attributes for span in spans)
    assert not any(g.COMPACTED in e.attributes for span in spans for e in span.events)


def test_an_overflow_retry_and_a_model_failure_are_failed_chat_spans(tape: Tape) -> None:
    model = ScriptedModel(
        [
            ContextLengthError("too long"),
            '{"summary": "s"}',
            {"content": "", "tool_calls": [{"name": "add"}]},
            ModelError("down"),
        ]
    )
    with pytest.raises(ModelError):
        Agent(tape, model=model, tools=[add]).run("Go")
    root, overflow, tools_call, failed, _tool = tape_spans(tape.name, tape.read()).spans

    assert (root.error, root.attributes[g.ERROR_TYPE]) == ("error", "model_error")
    assert (overflow.error, overflow.attributes[g.ERROR_TYPE]) == ("context_length_exceeded",) * 2
    assert (failed.error, failed.attributes[g.FINISH_REASONS]) == ("model_error", ("error",))
    assert g.RESPONSE_MODEL not in failed.attributes and tools_call.error is None
    assert g.COMPACTED not in overflow.attributes, "the call that overflowed was sent before the summary"
    assert tools_call.attributes[g.COMPACTED] is True and failed.attributes[g.COMPACTED] is True
    assert g.INPUT_TOKENS in tools_call.attributes, "the usage goes to the call that answered"


def test_an_interrupt_with_no_partial_answer_stopped_no_model_call(tmp_path: Path) -> None:
    run = {"status": "interrupted", "usage": None, "model": "offline", "elapsed_ms": 3.0, "steps": 0}
    entries = [
        TapeEntry(1, "message", {"role": "user", "content": "Hi"}, {"run_id": "r1"}),
        TapeEntry(2, "error", {"kind": "interrupted", "message": "stopped"}, {"run_id": "r1"}),
        TapeEntry(3, "event", {"name": "run", "data": run}, {"run_id": "r1"}),
    ]
    (root,) = tape_spans("t", entries).spans
    assert (root.error, root.attributes[g.ERROR_TYPE]) == ("interrupted", "interrupted")


def test_a_bub_tape_without_run_ids_starts_each_turn_at_its_prompt() -> None:
    def event(entry_id: int, name: str, data: Any) -> TapeEntry:
        return TapeEntry(entry_id, "event", {"name": name, "data": data}, {}, f"2026-01-01T00:00:0{entry_id}+00:00")

    entries = [
        TapeEntry(1, "anchor", {"name": "session/start"}, {}, "2026-01-01T00:00:01+00:00"),
        TapeEntry(2, "message", {"role": "user", "content": "Hi"}, {}, "2026-01-01T00:00:02+00:00"),
        TapeEntry(3, "message", {"role": "assistant", "content": "Hello"}, {}, "2026-01-01T00:00:03+00:00"),
        event(4, "run", {"status": "ok", "usage": usage(7, 2), "model": "gpt-4o"}),
        event(5, "notebook.cell", {"source": "x = 1"}),
    ]
    split = split_turns(entries)
    assert [e.id for e in split.turns[0].entries] == [2, 3, 4] and [e.id for e in split.turns[0].marks] == [1]
    projection = tape_spans("bub-tape", entries)
    assert (projection.turns, projection.pending) == (1, 1)
    root, chat = projection.spans
    assert (root.start_ns, root.end_ns) == (g.nanos("2026-01-01T00:00:02+00:00"), g.nanos("2026-01-01T00:00:04+00:00"))
    assert (chat.attributes[g.PROVIDER], chat.attributes[g.INPUT_TOKENS]) == ("openai", 7)


def test_a_runs_entries_written_before_another_runs_event_stay_in_their_own_turn() -> None:
    """A tape an earlier import wrote: a sub-agent's call (run ``b``) sits between the parent's call and the
    parent's ``run`` event (run ``a``), its own ``run`` event further on. Each run keeps its chat span and usage."""

    def entry(entry_id: int, kind: str, payload: dict[str, Any], run_id: str | None) -> TapeEntry:
        meta = {"run_id": run_id} if run_id else {}
        return TapeEntry(entry_id, kind, payload, meta, f"2026-01-01T00:00:{entry_id:02d}+00:00")

    def call(call_id: str) -> dict[str, Any]:
        return {"calls": [{"id": call_id, "type": "function", "function": {"name": "add", "arguments": "{}"}}]}

    def run(prompt: int) -> dict[str, Any]:
        return {"name": "run", "data": {"status": "ok", "usage": usage(prompt, 1), "model": "claude-sonnet-4-5"}}

    entries = [
        entry(1, "message", {"role": "user", "content": "Research it."}, None),
        entry(2, "tool_call", call("parent"), "a"),
        entry(3, "tool_call", call("child"), "b"),
        entry(4, "tool_result", {"results": ["3"]}, "a"),
        entry(5, "event", run(100), "a"),
        entry(6, "tool_result", {"results": ["4"]}, "b"),
        entry(7, "event", run(20), "b"),
        entry(8, "message", {"role": "user", "content": "Thanks."}, None),
    ]
    split = split_turns(entries)
    assert [[e.id for e in turn.entries] for turn in split.turns] == [[2, 4, 5], [3, 6, 7]]
    assert [e.id for e in split.pending] == [8]
    spans = tape_spans("imported", entries).spans
    chats, tools = by_operation(spans, g.CHAT), by_operation(spans, g.EXECUTE_TOOL)
    assert [(c.attributes["bub.entry.id"], c.attributes[g.INPUT_TOKENS]) for c in chats] == [(2, 100), (3, 20)]
    assert [t.attributes[g.TOOL_CALL_ID] for t in tools] == ["parent", "child"]


def test_ids_derive_from_the_tape_name_and_entry_ids(tmp_path: Path) -> None:
    one = bub_nb.open_tape("same-name", home=tmp_path / "a")
    two = bub_nb.open_tape("same-name", home=tmp_path / "b")
    other = bub_nb.open_tape("other-name", home=tmp_path / "a")
    for tape in (one, two, other):
        Agent(tape, model="offline").run("Hi")
    first, again = tape_spans(one.name, one.read()), tape_spans(one.name, one.read())
    assert first == again
    assert [s.span_id for s in first.spans] == [s.span_id for s in tape_spans(two.name, two.read()).spans]
    assert {s.trace_id for s in first.spans}.isdisjoint(s.trace_id for s in tape_spans(other.name, other.read()).spans)


def test_run_ids_pick_the_turns_to_export(tape: Tape) -> None:
    first = Agent(tape, model="offline").run("One")
    Agent(tape, model="offline").run("Two")
    picked = tape_spans(tape.name, tape.read(), run_ids={first.run_id})
    assert picked.turns == 1 and {s.attributes.get("bub.run.id") for s in picked.spans} - {None} == {first.run_id}


KINDS = ("message", "system", "anchor", "event", "tool_call", "tool_result", "error", "mystery")
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
PAYLOADS = st.fixed_dictionaries(
    {},
    optional={
        "role": st.sampled_from(["user", "assistant", "tool", 3]),
        "content": VALUES,
        "name": st.sampled_from(["run", "handoff", "summary", "loop.step", "x"]),
        "data": VALUES | st.fixed_dictionaries({"status": st.sampled_from(["ok", "error"]), "usage": VALUES}),
        "calls": st.lists(VALUES | st.fixed_dictionaries({"id": VALUES, "function": VALUES}), max_size=3),
        "results": st.lists(VALUES, max_size=3),
        "kind": st.sampled_from(["tool.x", "model_error", "interrupted"]),
    },
)
DATES = st.sampled_from(
    ["", "yesterday", "2026-01-01", "2026-01-01T00:00:00", "1969-12-31T23:59:59Z", "9999-12-31T23:59"]
)
ENTRIES = st.lists(
    st.tuples(
        st.sampled_from(KINDS),
        PAYLOADS,
        st.sampled_from([{}, {"run_id": "a"}, {"run_id": "b"}]),
        st.none() | DATES,
    ),
    max_size=25,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ENTRIES, st.booleans())
def test_any_tape_projects_to_well_formed_spans(raw: list[tuple[str, dict[str, Any], Any, Any]], content: bool) -> None:
    """Whatever a tape holds, dates that are no dates included, the projection does not fail, and every
    child hangs under its turn's root."""
    entries = [
        TapeEntry(i + 1, kind, payload, meta, f"2026-01-01T00:00:{i % 60:02d}.{i:06d}+00:00" if date is None else date)
        for i, (kind, payload, meta, date) in enumerate(raw)
    ]
    spans = tape_spans("fuzz", entries, content=content).spans
    roots = {span.span_id: span for span in spans if span.parent_id is None}
    assert len({(s.trace_id, s.span_id) for s in spans}) == len(spans)
    for span in spans:
        assert span.start_ns <= span.end_ns
        if span.parent_id is not None:
            assert roots[span.parent_id].trace_id == span.trace_id
        for value in span.attributes.values():
            assert isinstance(value, str | bool | int | float | tuple)


def test_calls_with_repeated_or_missing_ids_each_get_a_span() -> None:
    calls = [{"id": "call_0", "function": {"name": n, "arguments": "{}"}} for n in ("a", "b")]
    calls.append({"function": {"name": "c"}})
    run = {"status": "ok", "usage": usage(5, 1), "model": "llama3"}
    entries = [
        TapeEntry(1, "message", {"role": "user", "content": [{"type": "text", "text": "Go"}]}, {}),
        TapeEntry(2, "tool_call", {"calls": calls}, {}),
        TapeEntry(3, "tool_result", {"results": ["A", {"kind": "tool", "message": "b broke"}, "C"]}, {}),
        TapeEntry(4, "error", {"kind": "tool.tool", "message": "b broke", "details": {"call_id": "call_0"}}, {}),
        TapeEntry(5, "message", {"role": "assistant", "content": "Done"}, {}),
        TapeEntry(6, "event", {"name": "run", "data": run}, {}),
    ]
    spans = tape_spans("ids", entries, content=True).spans
    tools = by_operation(spans, g.EXECUTE_TOOL)
    assert [(t.name, t.attributes[g.TOOL_CALL_ID], t.error) for t in tools] == [
        ("execute_tool a", "call_0", None),
        ("execute_tool b", "call_0", "tool.tool"),
        ("execute_tool c", "", None),
    ]
    assert len({t.span_id for t in tools}) == 3
    first_chat = by_operation(spans, g.CHAT)[0]
    assert json.loads(str(first_chat.attributes[g.INPUT_MESSAGES]))[0]["parts"][0]["content"] == "Go"


def test_an_imported_claude_code_session_s_cache_writes_and_reads_are_on_its_spans(tmp_path: Path) -> None:
    """Claude Code's log has cache writes, which OpenAI's usage shape has no name for: the spans read them from the
    usage the log gave (``source_usage``); the cache reads are the tape's own."""
    from harness.logs import DATA

    report = bub_nb.import_log(DATA / "claude-code" / "sidechain_integrated.jsonl", home=tmp_path)
    tape = bub_nb.open_tape(report.tape, home=tmp_path)
    runs = [e.payload["data"] for e in tape.read() if e.kind == "event" and e.name == "run"]
    written = sum(run["source_usage"].get("cache_creation_input_tokens", 0) for run in runs)
    read = sum(run["usage"].get("prompt_tokens_details", {}).get("cached_tokens", 0) for run in runs)

    chats = by_operation(tape_spans(tape.name, tape.read()).spans, g.CHAT)

    assert written > 0 and read > 0
    assert sum(int(c.attributes.get(g.CACHE_CREATION_TOKENS, 0)) for c in chats) == written
    assert sum(int(c.attributes.get(g.CACHE_READ_TOKENS, 0)) for c in chats) == read
    assert g.CACHE_CREATION_TOKENS == "gen_ai.usage.cache_creation.input_tokens"
