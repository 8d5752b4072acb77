"""Recall by the prompt: earlier entries relevant to the turn's prompt, marked, budgeted, valid, never taken back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import bub_nb  # noqa: F401  (registers Tape.view)
from bub_nb import Tape, open_tape
from bub_nb.agent import Agent
from bub_nb.context import RECALL_TOKENS, Recall, build_view, parse_mode
from bub_nb.context.recall import RECALLED
from bub_nb.context.tokens import count_message_tokens
from bub_nb.errors import ContextError
from bub_nb.tape import TapeEntry

FACTS = [
    "My sister Ana moved to Lisbon in March 2021.",
    "The quarterly report lives in reports/q3-final.xlsx.",
    "We adopted a grey cat called Pixel last weekend.",
    "The database password rotation happens every 90 days.",
]


@pytest.fixture
def tape(tmp_path: Path) -> Tape:
    tape = open_tape("recall", home=tmp_path)
    tape.ensure_bootstrap_anchor()
    for number, fact in enumerate(FACTS):
        tape.append_message({"role": "user", "content": fact})
        tape.append_message({"role": "assistant", "content": f"Noted, point {number + 1}."})
        tape.handoff(f"phase/{number + 1}", {"summary": "A phase."})
    return tape


def ids_of(tape: Tape, text: str) -> int:
    return next(e.id for e in tape.read(kinds=("message",)) if e.payload.get("content") == text)


def recalled_texts(view: Any) -> list[str]:
    return [m["content"] for m in view.messages if str(m.get("content", "")).startswith(RECALLED)]


def test_recall_brings_back_the_earlier_entry_the_prompt_names_marked_with_its_id_and_score(tape: Tape) -> None:
    view = build_view(tape, "last+recall", prompt="Where did Ana move, and when?")
    lisbon = ids_of(tape, FACTS[0])
    assert view.recalled and view.recalled[0][0] == lisbon and view.recalled[0][1] > 0
    marked = recalled_texts(view)
    assert marked[0].startswith(f"[Recalled #{lisbon} (score ") and FACTS[0] in marked[0]
    assert lisbon in view.sources and view.mode == "last+recall"
    assert f"recalled #{lisbon}" in view.to_text()  # the context widget's summary line says so
    # Nothing relevant to the prompt: nothing recalled, the view is the plain last-anchor one.
    plain = build_view(tape, "last+recall", prompt="zyzzyva quux")
    assert not plain.recalled and plain.messages == build_view(tape, "last").messages


def test_recall_uses_the_newest_prompt_of_the_phase_when_none_is_given(tape: Tape) -> None:
    tape.append_message({"role": "user", "content": "What is the cat called?"})
    view = build_view(tape, "recall")
    assert [entry for entry, _ in view.recalled] == [ids_of(tape, FACTS[2])]
    assert view.messages[-1]["content"] == "What is the cat called?"  # the current phase comes after


def test_recall_stays_inside_its_token_budget(tape: Tape) -> None:
    for index in range(40):
        tape.append_message({"role": "user", "content": f"Lisbon note {index}: Ana likes the trams of Lisbon."})
    tape.handoff("phase/long", {"summary": "Many notes."})
    wide = build_view(tape, "last+recall:2000", prompt="Ana Lisbon trams")
    narrow = build_view(tape, Recall(parse_mode("last"), budget=60), prompt="Ana Lisbon trams")
    spent = sum(count_message_tokens(m) for m in narrow.messages if m["content"].startswith(RECALLED))
    assert 0 < spent <= 60 and len(narrow.recalled) < len(wide.recalled)
    assert parse_mode("last+recall").budget == RECALL_TOKENS  # type: ignore[attr-defined]
    with pytest.raises(ContextError, match="positive token budget"):
        parse_mode("recall:lots")


def test_retracted_and_redacted_entries_never_come_back(tape: Tape) -> None:
    cat, report = ids_of(tape, FACTS[2]), ids_of(tape, FACTS[1])
    assert build_view(tape, "recall", prompt="the grey cat Pixel").recalled[0][0] == cat
    tape.retract(cat)
    tape.redact(report)
    for prompt in ("the grey cat Pixel", "quarterly report xlsx", "redacted sha256"):
        view = build_view(tape, "recall", prompt=prompt)
        assert cat not in dict(view.recalled) and report not in dict(view.recalled)
        assert "Pixel" not in "".join(recalled_texts(view)) and "[redacted" not in "".join(recalled_texts(view))


def test_a_recalled_tool_exchange_stays_valid_for_the_api(tmp_path: Path) -> None:
    tape = open_tape("tools", home=tmp_path)
    tape.ensure_bootstrap_anchor()
    call = {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Oslo"}'}}
    tape.append_message({"role": "user", "content": "Weather in Oslo?"})
    tape.extend([TapeEntry.tool_call([call]), TapeEntry.tool_result(["Oslo: sleet, 2 degrees"])])
    tape.append_message({"role": "assistant", "content": "Sleet in Oslo."})
    tape.handoff("phase/1", {"summary": "Weather."})
    view = build_view(tape, "last+recall", prompt="Oslo sleet degrees")
    assert len(view.recalled) >= 2
    answered: set[str] = set()
    for message in view.messages:
        if message.get("role") == "tool":
            assert message.get("tool_call_id") in answered  # never a result whose call is missing
        for each in message.get("tool_calls") or ():
            answered.add(each["id"])
        assert message["role"] in ("system", "user", "assistant", "tool")
    recalled = recalled_texts(view)
    assert any("tool result:] Oslo: sleet" in text for text in recalled)
    assert all(not m.get("tool_calls") for m in view.messages if str(m.get("content", "")).startswith(RECALLED))


def test_agent_view_with_a_prompt_shows_what_it_would_recall_and_writes_nothing(tape: Tape) -> None:
    agent = Agent(tape, model="offline", context="last+recall")
    before = len(tape)
    view = agent.view(prompt="Tell me about Pixel the cat")
    assert len(tape) == before
    assert view.messages[-1] == {"role": "user", "content": "Tell me about Pixel the cat"}
    assert [entry for entry, _ in view.recalled] == [ids_of(tape, FACTS[2])]
    turn = agent.run("Tell me about Pixel the cat")
    assert turn.view is not None and dict(turn.view.recalled) == dict(view.recalled)
