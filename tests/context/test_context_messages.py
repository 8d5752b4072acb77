"""Mapping tape entries to OpenAI messages, over hand-built entry lists."""

from __future__ import annotations

from typing import Any

from bub_nb.context import Selection, render_entries, view_from_selection
from bub_nb.tape.entries import TapeEntry


def numbered(*entries: TapeEntry) -> list[TapeEntry]:
    return [entry.with_id(index) for index, entry in enumerate(entries, start=1)]


def call(call_id: str, name: str, arguments: str = "{}") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def test_message_entries_pass_through_as_copies() -> None:
    entries = numbered(TapeEntry.message({"role": "user", "content": "hi", "name": "ana"}))
    messages = render_entries(entries).messages
    assert messages == ({"role": "user", "content": "hi", "name": "ana"},)
    assert messages[0] is not entries[0].payload


def test_phase_anchor_becomes_an_assistant_message_with_its_state_as_json() -> None:
    entries = numbered(TapeEntry.anchor("phase/design", {"summary": "schéma prêt", "tables": 5}))
    assert render_entries(entries).messages == (
        {
            "role": "assistant",
            "content": '[Anchor created: phase/design]: {"summary": "schéma prêt", "tables": 5}',
        },
    )


def test_anchor_without_state_renders_null_like_bub() -> None:
    messages = render_entries(numbered(TapeEntry.anchor("session/start"))).messages
    assert messages[0]["content"] == "[Anchor created: session/start]: null"


def test_memory_anchors_are_not_messages() -> None:
    entries = numbered(
        TapeEntry.anchor("memory/open", {"version": 1}),
        TapeEntry.event("memory.long_term", {"content": "likes tea"}),
        TapeEntry.anchor("memory/seal", {"version": 1}),
        TapeEntry.message({"role": "user", "content": "hello"}),
    )
    rendering = render_entries(entries)
    assert rendering.messages == ({"role": "user", "content": "hello"},)
    assert rendering.sources == (4,)


def test_tool_call_and_results_pair_by_position() -> None:
    entries = numbered(
        TapeEntry.tool_call([call("c1", "fs.read"), call("c2", "add")], content="Reading."),
        TapeEntry.tool_result(["file text", {"sum": 3}]),
    )
    assert render_entries(entries).messages == (
        {"role": "assistant", "content": "Reading.", "tool_calls": [call("c1", "fs.read"), call("c2", "add")]},
        {"role": "tool", "content": "file text", "tool_call_id": "c1", "name": "fs.read"},
        {"role": "tool", "content": '{"sum": 3}', "tool_call_id": "c2", "name": "add"},
    )


def test_tool_call_without_content_sends_empty_text() -> None:
    entries = numbered(TapeEntry.tool_call([call("c1", "now")]), TapeEntry.tool_result(["noon"]))
    assert render_entries(entries).messages[0]["content"] == ""


def test_error_results_are_json_encoded_without_escaping_text() -> None:
    entries = numbered(
        TapeEntry.tool_call([call("c1", "fetch")]),
        TapeEntry.tool_result([{"kind": "tool", "message": "délai dépassé"}]),
    )
    assert render_entries(entries).messages[1]["content"] == '{"kind": "tool", "message": "délai dépassé"}'


def test_system_event_and_error_entries_are_left_out() -> None:
    entries = numbered(
        TapeEntry.system("You are helpful."),
        TapeEntry.event("run", {"status": "ok"}),
        TapeEntry.error("model", "timeout"),
        TapeEntry.message({"role": "user", "content": "still here"}),
    )
    rendering = render_entries(entries)
    assert rendering.messages == ({"role": "user", "content": "still here"},)
    assert rendering.dropped == ()


def test_entries_marked_context_false_are_hidden() -> None:
    entries = numbered(
        TapeEntry.message({"role": "user", "content": "secret"}, context=False),
        TapeEntry.anchor("phase/x", {"a": 1}, context=False),
        TapeEntry.message({"role": "user", "content": "visible"}),
    )
    assert render_entries(entries).messages == ({"role": "user", "content": "visible"},)


def test_results_without_their_call_are_dropped() -> None:
    entries = numbered(
        TapeEntry.tool_result(["orphan"]),
        TapeEntry.message({"role": "user", "content": "next"}),
    )
    rendering = render_entries(entries)
    assert rendering.messages == ({"role": "user", "content": "next"},)
    assert rendering.dropped == (1,)


def test_call_without_results_is_never_sent() -> None:
    entries = numbered(
        TapeEntry.message({"role": "user", "content": "go"}),
        TapeEntry.tool_call([call("c1", "slow")]),
    )
    rendering = render_entries(entries)
    assert rendering.messages == ({"role": "user", "content": "go"},)
    assert rendering.dropped == (2,)


def test_call_with_missing_results_is_dropped_with_its_partial_results() -> None:
    entries = numbered(
        TapeEntry.tool_call([call("c1", "a"), call("c2", "b")]),
        TapeEntry.tool_result(["only one"]),
        TapeEntry.message({"role": "assistant", "content": "done"}),
    )
    rendering = render_entries(entries)
    assert rendering.messages == ({"role": "assistant", "content": "done"},)
    assert rendering.dropped == (1, 2)


def test_results_after_an_interrupting_message_do_not_answer_the_call() -> None:
    entries = numbered(
        TapeEntry.tool_call([call("c1", "a")]),
        TapeEntry.message({"role": "user", "content": "wait"}),
        TapeEntry.tool_result(["late"]),
    )
    rendering = render_entries(entries)
    assert rendering.messages == ({"role": "user", "content": "wait"},)
    assert rendering.dropped == (1, 3)


def test_hidden_entries_between_call_and_results_do_not_break_the_pair() -> None:
    entries = numbered(
        TapeEntry.tool_call([call("c1", "a")]),
        TapeEntry.event("tool.start", {"name": "a"}),
        TapeEntry.error("tool", "retrying"),
        TapeEntry.tool_result(["ok"]),
    )
    assert render_entries(entries).sources == (1, 4)


def test_extra_results_beyond_the_calls_are_dropped() -> None:
    entries = numbered(TapeEntry.tool_call([call("c1", "a")]), TapeEntry.tool_result(["ok", "extra"]))
    rendering = render_entries(entries)
    assert [m["role"] for m in rendering.messages] == ["assistant", "tool"]
    assert rendering.dropped == (2,)


def test_calls_without_ids_cannot_be_answered_and_are_dropped() -> None:
    entries = numbered(
        TapeEntry.tool_call([{"type": "function", "function": {"name": "a", "arguments": "{}"}}]),
        TapeEntry.tool_result(["ok"]),
    )
    assert render_entries(entries).messages == ()


def test_window_selection_keeps_answers_with_their_call() -> None:
    entries = numbered(
        TapeEntry.message({"role": "user", "content": "q"}),
        TapeEntry.tool_call([call("c1", "a"), call("c2", "b")]),
        TapeEntry.tool_result(["1", "2"]),
        TapeEntry.message({"role": "assistant", "content": "answer"}),
    )
    view = view_from_selection(Selection(tuple(entries), last=2), "window:2")
    assert view.messages == ({"role": "assistant", "content": "answer"},)
    assert view.dropped == (3,)
    assert view_from_selection(Selection(tuple(entries), last=4)).entry_ids == (2, 3, 4)


def test_view_reports_tokens_per_message_and_the_prompt_total() -> None:
    entries = numbered(
        TapeEntry.message({"role": "user", "content": "a" * 40}),
        TapeEntry.message({"role": "assistant", "content": "b" * 8}),
    )
    view = view_from_selection(Selection(tuple(entries)))
    assert len(view.tokens) == len(view.messages) == 2
    assert view.tokens[0] > view.tokens[1]
    assert view.total_tokens > sum(view.tokens)


def test_view_shows_the_last_reported_run_usage() -> None:
    entries = numbered(
        TapeEntry.message({"role": "user", "content": "hi"}),
        TapeEntry.event("run", {"status": "ok", "usage": {"prompt_tokens": 9, "completion_tokens": 2}}),
        TapeEntry.message({"role": "user", "content": "again"}),
        TapeEntry.event(
            "run",
            {
                "status": "ok",
                "model": "gpt-x",
                "elapsed_ms": 5,
                "usage": {"prompt_tokens": 30, "completion_tokens": 4, "total_tokens": 34},
            },
        ),
        TapeEntry.event("run", {"status": "error"}),
    )
    usage = view_from_selection(Selection(tuple(entries))).usage
    assert usage is not None
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (30, 4, 34)
    assert (usage.model, usage.entry_id) == ("gpt-x", 4)
