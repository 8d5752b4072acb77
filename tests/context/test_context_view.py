"""Views built from real tapes: the context modes, handoffs, memory saves and how views read."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from harness.tapes import CountingStore

import bub_nb.memory  # noqa: F401  (registers Tape.memory)
from bub_nb.context import (
    FULL,
    LAST_ANCHOR,
    ContextStrategy,
    LastAnchor,
    NamedAnchor,
    Selection,
    View,
    Window,
    as_strategy,
    build_view,
    parse_mode,
    window,
)
from bub_nb.errors import AnchorNotFoundError, ContextError
from bub_nb.tape import MemoryTapeStore, Tape, TapeEntry, open_tape


def new_tape(name: str = "demo") -> Tape:
    return open_tape(name, store=MemoryTapeStore())


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, str]:
    return {"role": "assistant", "content": text}


def seed_002_tape() -> Tape:
    """A tape of 100 entries: session/start at 1, phase/design-complete at 50, messages between and after."""
    tape = new_tape()
    tape.append(TapeEntry.anchor("session/start", {"owner": "human"}))
    tape.append_message(user("Help me..."))
    tape.append_message(assistant("I'll help..."))
    tape.append_tool_call([{"id": "call_4", "type": "function", "function": {"name": "fs.read", "arguments": "{}"}}])
    tape.append_tool_result(["{...}"])
    while tape.last_id < 49:
        tape.append_message(user(f"design {tape.last_id + 1}") if tape.last_id % 2 else assistant("noted"))
    tape.append(TapeEntry.anchor("phase/design-complete", {"summary": "Database schema designed", "tables": 5}))
    tape.append_message(user("Now implement..."))
    tape.append_message(assistant("Starting..."))
    while tape.last_id < 100:
        tape.append_message(user(f"implement {tape.last_id + 1}") if tape.last_id % 2 else assistant("done"))
    return tape


def test_seed_002_last_anchor_starts_at_the_design_anchor() -> None:
    view = build_view(seed_002_tape())
    assert view.entry_ids == tuple(range(50, 101))
    assert view.anchor is not None and view.anchor.name == "phase/design-complete"
    assert view.messages[0] == {
        "role": "assistant",
        "content": '[Anchor created: phase/design-complete]: {"summary": "Database schema designed", "tables": 5}',
    }
    assert view.messages[1:3] == (user("Now implement..."), assistant("Starting..."))
    assert view.mode == "last-anchor"


def test_seed_002_named_anchor_and_full_tape_see_everything_from_entry_one() -> None:
    tape = seed_002_tape()
    named, full = build_view(tape, "session/start"), build_view(tape, None)
    assert named.entry_ids == full.entry_ids == tuple(range(1, 101))
    assert named.messages == full.messages
    assert named.anchor is not None and named.anchor.id == 1 and full.anchor is None
    assert full.messages[3]["tool_calls"][0]["id"] == "call_4"
    assert full.messages[4] == {"role": "tool", "content": "{...}", "tool_call_id": "call_4", "name": "fs.read"}
    assert full.messages[49]["content"].startswith("[Anchor created: phase/design-complete]")


def test_seed_002_window_holds_the_last_messages() -> None:
    view = build_view(seed_002_tape(), window(10))
    assert view.entry_ids == tuple(range(91, 101))
    assert view.mode == "window:10"
    assert len(view.tokens) == 10


def test_handoff_state_reaches_the_model_and_hides_what_came_before() -> None:
    tape = new_tape()
    tape.ensure_bootstrap_anchor()
    tape.append_message(user("before the handoff"))
    tape.append_message(assistant("old answer"))
    anchor, _event = tape.handoff("phase/x", {"summary": "Found the bug in auth.py line 45"})
    tape.append_message(user("Now implement the fix"))
    view = tape.view()
    assert isinstance(view, View)
    assert view.messages[0] == {
        "role": "assistant",
        "content": '[Anchor created: phase/x]: {"summary": "Found the bug in auth.py line 45"}',
    }
    assert view.messages[1:] == (user("Now implement the fix"),)
    assert min(view.entry_ids) == anchor.id


def test_saving_memory_between_two_user_messages_does_not_cut_the_conversation() -> None:
    tape = new_tape()
    tape.ensure_bootstrap_anchor()
    tape.handoff("phase/work", {"summary": "started"})
    tape.append_message(user("remember: I like Python"))
    tape.memory.save_long_term("User likes Python")
    tape.append_message(user("and what now?"))
    view = tape.view()
    assert view.anchor is not None and view.anchor.name == "phase/work"
    assert [m["content"] for m in view.messages] == [
        '[Anchor created: phase/work]: {"summary": "started"}',
        "remember: I like Python",
        "and what now?",
    ]


def test_phase_anchors_inside_a_view_are_rendered_where_they_fall() -> None:
    tape = new_tape()
    tape.append(TapeEntry.anchor("phase/a", {"n": 1}))
    tape.append_message(user("one"))
    tape.append(TapeEntry.anchor("phase/b", None))
    tape.append_message(user("two"))
    contents = [m["content"] for m in build_view(tape, "phase/a").messages]
    assert contents == ['[Anchor created: phase/a]: {"n": 1}', "one", "[Anchor created: phase/b]: null", "two"]


def test_named_anchor_resolves_to_its_last_occurrence() -> None:
    tape = new_tape()
    tape.append(TapeEntry.anchor("checkpoint", {"round": 1}))
    tape.append_message(user("first round"))
    tape.append(TapeEntry.anchor("checkpoint", {"round": 2}))
    tape.append_message(user("second round"))
    tape.append(TapeEntry.anchor("phase/later"))
    view = build_view(tape, "checkpoint")
    assert view.entry_ids == (3, 4, 5)
    assert view.mode == "anchor:checkpoint"


def test_unknown_anchor_names_the_anchor_and_the_known_ones() -> None:
    tape = seed_002_tape()
    with pytest.raises(AnchorNotFoundError, match=r"'phase/nope'.*session/start, phase/design-complete"):
        build_view(tape, "phase/nope")


def test_a_tape_without_phase_anchors_is_seen_whole() -> None:
    tape = new_tape()
    tape.append_message(user("hello"))
    tape.memory.ensure()
    tape.append_message(assistant("hi"))
    view = tape.view()
    assert view.anchor is None
    assert view.messages == (user("hello"), assistant("hi"))


def test_window_of_more_messages_than_the_tape_has_is_the_whole_tape() -> None:
    tape = seed_002_tape()
    assert build_view(tape, window(500)).messages == build_view(tape, FULL).messages


def test_window_counts_only_what_the_model_sees() -> None:
    tape = new_tape()
    tape.append_message(user("q1"))
    tape.append_tool_call([{"id": "c1", "type": "function", "function": {"name": "slow", "arguments": "{}"}}])
    tape.append_message(user("q2"))  # interrupts the call, which then never reaches the model
    for _ in range(5):
        tape.append_event("run", {"status": "ok"})
    tape.append_system("system prompt")
    view = build_view(tape, window(2))
    assert view.messages == (user("q1"), user("q2"))


def test_view_carries_the_usage_the_endpoint_reported() -> None:
    tape = new_tape()
    tape.ensure_bootstrap_anchor()
    tape.append_message(user("hi"))
    tape.append_message(assistant("hello"))
    usage = {"prompt_tokens": 20, "completion_tokens": 2, "total_tokens": 22}
    tape.append_event("run", {"status": "ok", "usage": usage, "model": "m", "elapsed_ms": 12})
    view = tape.view()
    assert view.usage is not None and view.usage.prompt_tokens == 20 and view.usage.model == "m"
    assert "last run reported prompt 20, completion 2" in str(view)


def long_tape(store: MemoryTapeStore, turns: int) -> Tape:
    tape = open_tape("long", store=store)
    tape.ensure_bootstrap_anchor()
    entries: list[TapeEntry] = []
    for turn in range(turns):
        entries += [TapeEntry.message(user(f"q{turn}")), TapeEntry.message(assistant(f"a{turn}"))]
    tape.extend(entries)
    tape.handoff("phase/recent", {"summary": "long story"})
    tape.append_message(user("latest"))
    return tape


def test_last_anchor_view_reads_only_from_the_anchor_on() -> None:
    store = CountingStore()
    tape = long_tape(store, 2000)
    store.reads.clear()
    view = tape.view()
    anchor = tape.last_anchor()
    assert anchor is not None
    assert (anchor.id, None) in store.reads
    assert all(start >= anchor.id for start, _ in store.reads)
    assert len(view.messages) == 2


def test_window_reads_backwards_only_as_far_as_it_needs() -> None:
    store = CountingStore()
    tape = long_tape(store, 2000)
    store.reads.clear()
    view = build_view(tape, window(5))
    assert len(view.messages) == 5
    assert store.reads == []
    assert store.reversed_entries < 20


class LastUserMessages:
    """A strategy of the user's own: only what people typed, newest few."""

    label = "user-only"

    def __init__(self, count: int) -> None:
        self.count = count

    def select(self, tape: Tape) -> Selection:
        typed = [e for e in tape.read(kinds=("message",)) if e.payload.get("role") == "user"]
        return Selection(tuple(typed[-self.count :]))


def test_users_can_pass_their_own_strategy() -> None:
    strategy = LastUserMessages(2)
    assert isinstance(strategy, ContextStrategy)
    view = build_view(seed_002_tape(), strategy)
    assert view.mode == "user-only"
    assert [m["role"] for m in view.messages] == ["user", "user"]
    assert view.entry_ids == (98, 100)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("last", LastAnchor()),
        (" LAST-ANCHOR ", LastAnchor()),
        ("full", FULL),
        ("window:20", Window(20)),
        ("Window: 3", Window(3)),
        ("phase/design-complete", NamedAnchor("phase/design-complete")),
        ("anchor:full", NamedAnchor("full")),
    ],
)
def test_parse_mode_reads_what_people_type(text: str, expected: ContextStrategy) -> None:
    assert parse_mode(text) == expected


@pytest.mark.parametrize("text", ["", "   ", "window", "window:", "window:0", "window:-2", "window:abc", "window:²"])
def test_parse_mode_names_bad_input(text: str) -> None:
    with pytest.raises(ContextError, match=repr(text).replace("[", r"\[")):
        parse_mode(text)


def test_mode_values_become_strategies() -> None:
    assert as_strategy(LAST_ANCHOR) == LastAnchor()
    assert as_strategy(None) is FULL
    assert as_strategy("phase/x") == NamedAnchor("phase/x")
    assert as_strategy(window(4)) == Window(4)
    with pytest.raises(ContextError, match="42"):
        as_strategy(42)
    with pytest.raises(ContextError, match="0"):
        window(0)


def test_view_renders_as_text_markdown_and_html() -> None:
    tape = new_tape()
    tape.handoff("phase/<b>", {"summary": "a | b"})
    tape.append_message(user("<script>alert(1)</script>"))
    view = tape.view()
    text = view.to_text()
    assert text.splitlines()[0].startswith("View [last-anchor] from anchor 'phase/<b>' (#1)")
    assert "<script>alert(1)</script>" in text
    assert "&lt;script&gt;" in view._repr_html_() and "<script>" not in view._repr_html_()
    markdown = view.to_markdown()
    assert "| #3 | user |" in markdown
    assert "a \\| b" in markdown


def test_view_messages_are_ready_to_send_and_safe_to_extend() -> None:
    tape = seed_002_tape()
    view = tape.view()
    sent = view.to_messages()
    sent.append(user("one more"))
    sent[0]["content"] = "changed"
    assert view.messages[0]["content"].startswith("[Anchor created")
    assert len(view.messages) == len(sent) - 1


def test_views_of_a_file_tape_match_views_of_a_memory_tape(tmp_path: Path) -> None:
    remembered = seed_002_tape()
    on_disk = open_tape("copy", home=tmp_path)
    on_disk.extend([TapeEntry(0, e.kind, e.payload, e.meta, e.date) for e in remembered.read()])
    modes: Sequence[Any] = (LAST_ANCHOR, None, "session/start", window(7))
    for mode in modes:
        assert build_view(on_disk, mode) == build_view(remembered, mode)


def test_views_sliced_through_tool_turns_are_accepted_by_an_openai_endpoint() -> None:
    from openai import OpenAI

    from bub_nb.testing import OpenAICompatibleServer

    def calls(*ids: str) -> list[dict[str, Any]]:
        return [{"id": i, "type": "function", "function": {"name": "lookup", "arguments": "{}"}} for i in ids]

    tape = new_tape()
    tape.ensure_bootstrap_anchor()
    tape.append_message(user("look both up"))
    tape.append_tool_call(calls("c1", "c2"))
    tape.handoff("auto_handoff/context_overflow", {"reason": "context_length_exceeded"})
    tape.append_tool_result(["one", {"kind": "tool", "message": "failed"}])  # orphaned by the handoff
    tape.append_tool_call(calls("c3"), content="One more.")
    tape.append_tool_result(["three"])
    tape.append_tool_call(calls("c4"))  # the turn was interrupted before the result
    tape.append_message(user("and now?"))
    modes: list[Any] = [LAST_ANCHOR, None, "session/start", *(window(n) for n in range(1, 8))]
    with OpenAICompatibleServer() as server:
        client = OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        for mode in modes:
            view = build_view(tape, mode)
            reply = client.chat.completions.create(model="bub-nb-test", messages=view.to_messages())
            assert reply.choices[0].message.content
    last = build_view(tape)
    assert [m["role"] for m in last.messages] == ["assistant", "assistant", "tool", "user"]
    assert last.messages[1]["content"] == "One more."
