"""Retraction: views leave retracted entries out from the retraction on, always valid for the API, and a past
turn's view stays what that turn sent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_context_properties import TAPE, assert_consistent, assert_valid_for_openai, tape_of

from bub_nb.agent import Agent
from bub_nb.agent.models import OpenAIModel
from bub_nb.agent.replay import replay
from bub_nb.context import FULL, LAST_ANCHOR, PHASES, build_view, diff_views, parse_mode, window
from bub_nb.errors import EntryNotFoundError, ReplayError, RetractionError
from bub_nb.tape import Tape, TapeEntry, open_tape
from bub_nb.testing import OpenAICompatibleServer

OPERATION = st.tuples(
    st.sampled_from(["retract", "retract", "unretract"]),
    st.integers(1, 15),
    st.one_of(st.none(), st.integers(0, 4)),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(TAPE, st.lists(OPERATION, max_size=6), st.integers(1, 8))
def test_any_retractions_leave_every_view_valid_and_without_a_retracted_entry(
    entries: list[TapeEntry], operations: list[tuple[str, int, int | None]], size: int
) -> None:
    tape = tape_of(entries)
    tape.ensure_bootstrap_anchor()
    for action, first, extra in operations:
        target = first if extra is None else f"{first}-{first + extra}"
        before = len(tape)
        try:
            getattr(tape, action)(target, reason="property")
        except (RetractionError, EntryNotFoundError):
            assert len(tape) == before  # a refusal writes nothing
    retracted = tape.retracted()
    names = sorted({anchor.name for anchor in tape.anchors(limit=None)})
    for mode in [LAST_ANCHOR, FULL, PHASES, window(size), parse_mode("notebook"), *names]:
        view = build_view(tape, mode)
        assert_valid_for_openai(view.messages)
        assert_consistent(view, tape)
        assert not retracted & set(view.sources), f"{mode}: retracted {sorted(retracted)} in {view.sources}"
    frame = tape.to_frame()
    assert set(frame.loc[frame["retracted"], "id"]) == retracted


def test_a_call_and_its_results_are_retracted_together_and_come_back_together(tape: Tape) -> None:
    tape.ensure_bootstrap_anchor()
    tape.append_message({"role": "user", "content": "Look it up"})
    call = tape.append_tool_call([{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}])
    result = tape.append_tool_result(["found"])
    assert tape.retract(result.id, reason="wrong tool").payload["data"] == {
        "ids": [[call.id, result.id]],
        "asked": f"#{result.id}",
        "reason": "wrong tool",
    }
    assert {call.id, result.id} == tape.retracted()
    assert call.id not in tape.view().entry_ids
    tape.unretract(call.id)
    assert tape.retracted() == frozenset() and {call.id, result.id} <= set(tape.view().entry_ids)


def test_an_assistant_message_with_tool_calls_goes_with_its_tool_messages(tape: Tape) -> None:
    tape.append_message({"role": "user", "content": "hi"})
    calls = [{"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}} for i in ("a", "b")]
    asked = tape.append_message({"role": "assistant", "content": None, "tool_calls": calls})
    first = tape.append_message({"role": "tool", "tool_call_id": "a", "content": "1"})
    second = tape.append_message({"role": "tool", "tool_call_id": "b", "content": "2"})
    tape.retract(first.id)
    assert tape.retracted() == {asked.id, first.id, second.id}
    assert tape.view(None).entry_ids == (1,)


@pytest.mark.parametrize(
    ("target", "refusal"),
    [
        (1, "anchors cannot be retracted"),
        (2, "never reaches a request"),
        ("4-3", "runs backwards"),
        ("1-3", "holds anchor #1"),
        (99, "is not on tape"),
        ("x", "named by id"),
    ],
)
def test_bad_retractions_are_refused_in_one_line_before_anything_is_written(
    tape: Tape, target: object, refusal: str
) -> None:
    tape.ensure_bootstrap_anchor()
    tape.append_message({"role": "user", "content": "hi"})
    before = tape.path.read_bytes()  # type: ignore[union-attr]
    with pytest.raises((RetractionError, EntryNotFoundError), match=refusal) as refused:
        tape.retract(target)  # type: ignore[arg-type]
    assert "\n" not in str(refused.value)
    assert tape.path.read_bytes() == before  # type: ignore[union-attr]


def test_retracting_twice_or_unretracting_what_is_not_retracted_is_refused(tape: Tape) -> None:
    tape.append_message({"role": "user", "content": "hi"})
    with pytest.raises(RetractionError, match=r"is not retracted, so there is nothing"):
        tape.unretract(1)
    tape.retract(1)
    with pytest.raises(RetractionError, match="already retracted"):
        tape.retract("#1")


def test_a_past_turn_still_shows_what_it_sent_and_the_diff_shows_the_tokens_freed(
    openai_server: OpenAICompatibleServer, tape: Tape, model: OpenAIModel
) -> None:
    agent = Agent(tape, model)
    openai_server.reply("Noted.")
    agent.run("My notes: " + "lots of words that turned out wrong " * 20)
    openai_server.reply("Sure.")
    agent.run("Now something else")
    sent = openai_server.requests[-1]["messages"]
    wrong = next(e for e in tape.read() if e.kind == "message" and "turned out wrong" in str(e.payload))
    answer = next(e for e in tape.read(wrong.id) if e.kind == "message" and e.payload.get("role") == "assistant")

    tape.retract(f"{wrong.id}-{answer.id}", reason="a wrong turn")

    past = tape.view_of_turn(-1)
    assert json.dumps(list(past.messages), sort_keys=True) == json.dumps(sent, sort_keys=True)
    assert wrong.id in past.entry_ids
    now = tape.view()
    assert wrong.id not in now.entry_ids and answer.id not in now.entry_ids
    assert set(now.retracted) >= {wrong.id, answer.id}
    diff = diff_views(past, now)
    assert {wrong.id, answer.id} <= set(diff.left) and set(diff.retracted) == {wrong.id, answer.id}
    assert diff.token_change["messages"] < -100 and "retracted" in diff.summary
    openai_server.reply("Fresh.")
    agent.run("Go on")
    assert "turned out wrong" not in json.dumps(openai_server.requests[-1]["messages"])


def test_a_summarizing_handoff_leaves_retracted_entries_out_of_its_summary(tape: Tape) -> None:
    tape.ensure_bootstrap_anchor()
    tape.append_message({"role": "user", "content": "We measured 42 widgets in plant A."})
    wrong = tape.append_message({"role": "user", "content": "Also 999999 gadgets in /tmp/wrong.csv"})
    tape.retract(wrong.id, reason="never happened")
    entries = Agent(tape, "offline").handoff("phase/next", summarize=True)
    state = next(e for e in entries if e.kind == "anchor").payload["state"]
    assert "999999" not in json.dumps(state) and wrong.id not in state["sources"]


def test_a_forked_session_keeps_its_retractions_on_the_fork_s_own_ids(tape: Tape) -> None:
    tape.append_message({"role": "user", "content": "before the fork"})
    tape.append_message({"role": "assistant", "content": "noted"})
    tape.handoff("phase/one")
    tape.append_message({"role": "user", "content": "kept"})
    wrong = tape.append_message({"role": "user", "content": "wrong"})
    tape.retract(wrong.id)
    child = tape.fork_session("child", from_anchor="phase/one")
    copied = next(e for e in child.read() if e.kind == "message" and e.payload["content"] == "wrong")
    assert child.retracted() == {copied.id} and copied.id != wrong.id
    assert [m["content"] for m in child.view().messages if m["role"] == "user"] == ["kept"]


def test_a_replay_sends_no_retracted_prompt_and_copies_no_retraction_onto_its_fork(tape: Tape) -> None:
    agent = Agent(tape, "offline")
    agent.run("first question")
    prompt = next(e for e in tape.read() if e.kind == "message" and e.payload["content"] == "first question")
    tape.retract(prompt.id)
    agent.run("second question")
    frame = replay(tape, model="offline")
    fork = Tape(frame.attrs["fork"], tape.base_store)
    assert list(frame["prompt"]) == ["second question"] and frame.attrs["retracted"] == (prompt.id,)
    assert not [e for e in fork.read() if e.name in ("retract", "unretract")]
    assert "first question" not in [e.payload.get("content") for e in fork.read() if e.kind == "message"]


def test_a_replay_of_only_retracted_prompts_is_refused_saying_so(tape: Tape) -> None:
    Agent(tape, "offline").run("the only question")
    prompt = next(e for e in tape.read() if e.kind == "message" and e.payload["content"] == "the only question")
    tape.retract(prompt.id)
    before = len(tape.base_store.list_tapes())
    with pytest.raises(ReplayError, match="no recorded prompt but retracted ones"):
        replay(tape, model="offline")
    assert len(tape.base_store.list_tapes()) == before


def test_which_of_some_ids_are_retracted_is_read_from_the_first_of_them_on(tmp_path: Path) -> None:
    """A file tape past several of its index's marks, with retractions, one undone, before and after the ids asked
    about: the answer is the whole tape's, read from the index's line before the first id asked about."""
    tape = open_tape("long", home=tmp_path)
    for number in range(3000):
        tape.append_message({"role": "user", "content": f"message {number}"})
    early, middle, late = 20, 1500, 2900
    for target in (early, middle, late, f"{middle + 1}-{middle + 3}"):
        tape.retract(target, reason="test")
    tape.unretract(middle + 2, reason="test")
    whole = tape.retracted()
    assert whole == {early, middle, middle + 1, middle + 3, late}
    for ids in ([late], [middle, middle + 2, late, late + 1], range(1400, 3000), [early, 2000], []):
        assert tape.retracted_among(ids) == whole & set(ids)
    fresh = open_tape("long", home=tmp_path)  # the index read from its file, not the one the appends kept
    assert fresh.retracted_among(range(1400, 3000)) == whole - {early}
