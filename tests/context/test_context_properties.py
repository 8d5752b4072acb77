"""Every view of every tape is a message list the OpenAI API accepts."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bub_nb.context import FULL, LAST_ANCHOR, PHASES, View, build_view, window
from bub_nb.context.messages import is_hidden
from bub_nb.tape import MemoryTapeStore, Tape, TapeEntry, is_phase_anchor, open_tape

CALL_IDS = st.sampled_from(["c1", "c2", "c3", "", None])
ANCHOR_NAMES = st.sampled_from(["session/start", "phase/a", "phase/b", "memory/open", "memory/seal"])
TEXT = st.text(max_size=12)
META = st.one_of(st.just({}), st.just({"context": False}), st.just({"run_id": "r1"}))


def tool_call(call_id: str | None) -> dict[str, Any]:
    call: dict[str, Any] = {"type": "function", "function": {"name": "f", "arguments": "{}"}}
    if call_id is not None:
        call["id"] = call_id
    return call


MESSAGE = st.one_of(
    st.builds(lambda role, text: {"role": role, "content": text}, st.sampled_from(["user", "assistant"]), TEXT),
    st.builds(lambda call_id, text: {"role": "tool", "tool_call_id": call_id, "content": text}, CALL_IDS, TEXT),
    st.builds(
        lambda ids: {"role": "assistant", "content": None, "tool_calls": [tool_call(i) for i in ids]},
        st.lists(CALL_IDS, min_size=1, max_size=3),
    ),
)
RESULT = st.one_of(TEXT, st.integers(), st.none(), st.fixed_dictionaries({"kind": TEXT, "message": TEXT}))

ENTRY = st.one_of(
    st.builds(TapeEntry.message, MESSAGE),
    st.builds(
        lambda ids, text: TapeEntry.tool_call([tool_call(i) for i in ids], text), st.lists(CALL_IDS, max_size=3), TEXT
    ),
    st.builds(TapeEntry.tool_result, st.lists(RESULT, max_size=4)),
    st.builds(
        TapeEntry.anchor, ANCHOR_NAMES, st.one_of(st.none(), st.fixed_dictionaries({"version": st.integers(1, 3)}))
    ),
    st.builds(TapeEntry.event, st.sampled_from(["run", "handoff", "memory.daily"]), st.just({"status": "ok"})),
    st.builds(TapeEntry.system, TEXT),
    st.builds(TapeEntry.error, TEXT, TEXT),
)
HIDEABLE_ENTRY = st.builds(lambda entry, meta: TapeEntry(0, entry.kind, entry.payload, meta), ENTRY, META)


@st.composite
def call_turn(draw: st.DrawFn) -> list[TapeEntry]:
    """A call and its results as an agent writes them, sometimes short, long or interrupted."""
    count = draw(st.integers(1, 3))
    calls = [tool_call(f"t{draw(st.integers(0, 9))}{n}") for n in range(count)]
    answered = count + draw(st.sampled_from([0, 0, 0, -1, 1]))
    turn = [
        TapeEntry.tool_call(calls, draw(TEXT)),
        TapeEntry.tool_result(draw(st.lists(RESULT, min_size=answered, max_size=answered))),
    ]
    between = draw(st.lists(HIDEABLE_ENTRY, max_size=1))
    return [turn[0], *between, turn[1]]


TAPE = st.lists(st.one_of(HIDEABLE_ENTRY.map(lambda entry: [entry]), call_turn()), max_size=20).map(
    lambda chunks: [entry for chunk in chunks for entry in chunk]
)


def assert_valid_for_openai(messages: tuple[dict[str, Any], ...]) -> None:
    """The API's rules: tool messages answer the call right before them, and every call is answered."""
    index = 0
    while index < len(messages):
        message = messages[index]
        assert isinstance(message.get("role"), str)
        assert message["role"] != "tool", f"tool message without its call at {index}: {message}"
        calls = message.get("tool_calls")
        index += 1
        if message["role"] != "assistant" or not calls:
            continue
        ids = [call["id"] for call in calls]
        assert all(isinstance(i, str) and i for i in ids) and len(set(ids)) == len(ids)
        answered = []
        while index < len(messages) and messages[index]["role"] == "tool":
            answered.append(messages[index]["tool_call_id"])
            index += 1
        assert sorted(answered) == sorted(ids), f"call {ids} answered by {answered}"


def assert_consistent(view: View, tape: Tape) -> None:
    assert len(view.messages) == len(view.tokens) == len(view.sources)
    assert view.entry_ids == tuple(dict.fromkeys(view.sources))
    assert list(view.sources) == sorted(view.sources)
    assert view.total_tokens == sum(view.tokens) + 3
    by_id = {entry.id: entry for entry in tape.read()}
    for source in view.sources:
        entry = by_id[source]
        assert not is_hidden(entry)
        assert entry.kind in ("message", "tool_call", "tool_result", "anchor")
        assert entry.kind != "anchor" or is_phase_anchor(entry.name)


def tape_of(entries: list[TapeEntry]) -> Tape:
    tape = open_tape("prop", store=MemoryTapeStore())
    tape.extend(entries)
    return tape


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(TAPE, st.integers(1, 8))
def test_every_view_of_any_tape_is_valid_for_the_api(entries: list[TapeEntry], size: int) -> None:
    tape = tape_of(entries)
    full = build_view(tape, FULL)
    names = {anchor.name for anchor in tape.anchors(limit=None)}
    modes = [LAST_ANCHOR, None, PHASES, window(size), *sorted(names)]
    for mode in modes:
        view = build_view(tape, mode)
        assert_valid_for_openai(view.messages)
        assert_consistent(view, tape)

    last = tape.last_anchor()
    view = build_view(tape, LAST_ANCHOR)
    if last is not None:
        assert all(source >= last.id for source in view.sources)
        assert view.anchor == last

    phases = build_view(tape, PHASES)
    current = build_view(tape, LAST_ANCHOR)
    earlier = len(phases.messages) - len(current.messages)
    assert phases.messages[earlier:] == current.messages and phases.anchor == current.anchor
    shown = [a.id for a in tape.anchors(limit=None) if is_phase_anchor(a.name) and not is_hidden(tape.get(a.id))]
    assert list(phases.sources[:earlier]) == [i for i in shown if last is not None and i < last.id]

    windowed = build_view(tape, window(size))
    tail = list(full.messages[-size:])
    while tail and tail[0]["role"] == "tool":
        tail.pop(0)
    assert list(windowed.messages) == tail
