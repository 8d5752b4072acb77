"""The ``phases`` view: every earlier phase's anchor state, compact and in order, then the current phase in full."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import bub_nb  # noqa: F401  (registers Tape.view)
from bub_nb import Tape, open_tape
from bub_nb.agent import Agent
from bub_nb.agent.models import OpenAIModel, ScriptedModel
from bub_nb.context import LAST_ANCHOR, PHASES, NamedAnchor, build_view, parse_mode
from bub_nb.tape import TapeEntry
from bub_nb.tape.citations import cited_ids


def summary_state(tape: Tape, text: str, **extra: Any) -> dict[str, Any]:
    """A summarizing handoff's state as the summary contract shapes it, written by hand for these tests."""
    first = (tape.last_anchor().id if tape.last_anchor() else 0) + 1  # type: ignore[union-attr]
    sources = cited_ids(text)
    return {
        "summary": text,
        "next_steps": "",
        "sources": sources,
        "range": [first, tape.last_id],
        "summarized_by": "offline",
        "uncited": [],
        "removed_citations": 0,
        **extra,
    }


def talk(tape: Tape, *texts: str) -> list[int]:
    ids = []
    for text in texts:
        ids.append(tape.append_message({"role": "user", "content": text}).id)
        ids.append(tape.append_message({"role": "assistant", "content": f"answer to {text}"}).id)
    return ids


@pytest.fixture
def session(tmp_path: Path) -> Tape:
    """Three closed phases, each summarized with citations into the next anchor, and a current phase."""
    tape = open_tape("phases", home=tmp_path)
    tape.ensure_bootstrap_anchor()
    for number, topic in enumerate(("parsing", "plotting", "testing"), start=1):
        first = talk(tape, f"{topic} question", f"{topic} follow-up")[0]
        tape.handoff(f"phase/{number}", summary_state(tape, f"We worked on {topic} [#{first}]."))
    talk(tape, "current question")
    return tape


def test_phases_holds_every_earlier_summary_in_order_then_the_current_phase(session: Tape) -> None:
    view = session.view("phases")
    last = build_view(session, LAST_ANCHOR)
    earlier = view.messages[: len(view.messages) - len(last.messages)]
    assert view.messages[len(earlier) :] == last.messages
    assert view.anchor == last.anchor and view.mode == "phases"
    phase_anchors = [a for a in session.anchors(limit=None) if a.id < last.anchor.id]  # type: ignore[union-attr]
    assert [m["content"].splitlines()[0] for m in earlier] == [
        f"[Earlier phase: {a.name} (#{a.id}-#{b.id - 1})]"
        for a, b in zip(phase_anchors, [*phase_anchors[1:], last.anchor], strict=True)
    ]
    for message, anchor in zip(earlier, phase_anchors, strict=True):
        assert message["role"] == "assistant" and "tool_calls" not in message
        summary = (anchor.state or {}).get("summary")
        if summary:
            assert f": {summary}" in message["content"].splitlines()[1]
    assert view.sources[: len(earlier)] == tuple(a.id for a in phase_anchors)


def test_an_earlier_phase_shows_its_summary_first_and_leaves_the_bookkeeping_on_the_tape(session: Tape) -> None:
    ids = talk(session, "decide", "plan docs")
    decided, docs = f"It was decided [#{ids[1]}].", f"Write docs [#{ids[2]}-#{ids[3]}]."
    session.handoff("phase/4", summary_state(session, decided, next_steps=docs, goal="ship"))
    talk(session, "now")
    session.handoff("phase/5")
    message = next(m for m in session.view("phases").messages if "phase/4" in m["content"])
    lines = message["content"].splitlines()
    first = session.find_anchor("phase/4").state["range"][0]  # type: ignore[index]
    assert lines[1] == f"Summary of #{first}-#{ids[-1]}: {decided}"
    assert lines[2] == f"Next steps: {docs}"
    assert json.loads(lines[3].removeprefix("State: ")) == {"goal": "ship"}
    for key in ("sources", "summarized_by", "uncited", "removed_citations", "range"):
        assert key not in message["content"]


def test_anchors_without_a_summary_or_with_odd_states_still_show_what_they_carry(tmp_path: Path) -> None:
    tape = open_tape("odd", home=tmp_path)
    tape.handoff("plain", {"goal": "a plain handoff"})
    tape.handoff("bare")
    tape.handoff("odd", {"summary": {"not": "text"}, "next_steps": 3, "range": ["a", 2], "sources": "x"})
    tape.append(TapeEntry(0, "anchor", {"name": "listed", "state": [1, 2]}, {}))
    tape.handoff("current")
    contents = [m["content"] for m in tape.view("phases").messages]
    assert contents[0] == '[Earlier phase: plain (#1-#2)]\nState: {"goal": "a plain handoff"}'
    assert contents[1] == "[Earlier phase: bare (#3-#4)]"
    assert contents[2] == '[Earlier phase: odd (#5-#6)]\nState: {"summary": {"not": "text"}, "next_steps": 3}'
    assert contents[3] == "[Earlier phase: listed (#7)]\nState: [1, 2]"
    assert contents[4].startswith("[Anchor created: current]")


def test_memory_anchors_are_not_phases_and_hidden_anchors_stay_hidden(tmp_path: Path) -> None:
    tape = open_tape("memory", home=tmp_path)
    tape.handoff("phase/1", {"summary": "one"})
    tape.memory.save_long_term("likes tea")
    tape.append(TapeEntry.anchor("quiet", {}, context=False))
    tape.handoff("phase/2", {"summary": "two"})
    contents = [m["content"] for m in tape.view("phases").messages]
    quiet = tape.find_anchor("quiet").id
    assert [c.splitlines()[0] for c in contents[:-1]] == [f"[Earlier phase: phase/1 (#1-#{quiet - 1})]"]
    assert not any("memory/" in c for c in contents)


def test_the_overflow_anchor_is_a_phase_and_its_long_error_is_clipped(tmp_path: Path) -> None:
    tape = open_tape("overflow", home=tmp_path)
    tape.ensure_bootstrap_anchor()
    talk(tape, "a long question")
    error = "maximum context length is 8192 tokens; " * 40
    tape.handoff("auto_handoff/context_overflow", {"reason": "context_length_exceeded", "error": error})
    talk(tape, "the retry")
    tape.handoff("phase/next")
    message = tape.view("phases").messages[1]["content"]
    assert message.startswith("[Earlier phase: auto_handoff/context_overflow")
    state = json.loads(message.splitlines()[1].removeprefix("State: "))
    assert state["reason"] == "context_length_exceeded" and len(state["error"]) == 300 < len(error)
    assert state["error"].endswith("…")


def test_without_a_phase_anchor_phases_is_the_whole_tape(tmp_path: Path) -> None:
    tape = open_tape("flat", home=tmp_path)
    talk(tape, "one", "two")
    assert tape.view("phases").messages == tape.view("full").messages
    assert tape.view("phases").anchor is None


def test_the_word_phases_is_a_mode_and_anchor_prefix_still_reaches_an_anchor_so_named(tmp_path: Path) -> None:
    tape = open_tape("named", home=tmp_path)
    tape.handoff("phases", {"goal": "an anchor whose name is a mode word"})
    talk(tape, "hi")
    assert parse_mode("phases") is PHASES and parse_mode(" Phases ") is PHASES
    assert parse_mode("anchor:phases") == NamedAnchor("phases")
    assert tape.view("anchor:phases").anchor.name == "phases"  # type: ignore[union-attr]


def test_an_agent_in_phases_mode_sends_the_chain_of_summaries(session: Tape, openai_server: Any) -> None:
    openai_server.reply("Noted.")
    model = OpenAIModel("test-model", api_key="test-key-not-secret", base_url=openai_server.base_url, max_retries=0)
    agent = Agent(session, model=model, context="phases")
    agent.run("What have we done so far?")
    sent = openai_server.last_request["messages"]
    summaries = [m["content"] for m in sent if m["content"].startswith("[Earlier phase: phase/")]
    assert [s.split("\n")[1] for s in summaries] == [
        f"Summary of #{a.state['range'][0]}-#{a.state['range'][1]}: {a.state['summary']}"  # type: ignore[index]
        for a in session.anchors(limit=None)
        if a.name in ("phase/1", "phase/2")
    ]
    assert sent[-1] == {"role": "user", "content": "What have we done so far?"}


@pytest.mark.parametrize("word", ["phases", "full", "window:2", "last"])
def test_an_agent_takes_mode_words_as_the_magics_do(session: Tape, word: str) -> None:
    turn = Agent(session, model=ScriptedModel(["Fine."]), context=word).run("And now?")
    assert turn.text == "Fine."
    assert turn.view is not None and turn.view.mode == parse_mode(word).label


def test_the_offline_model_names_the_earlier_phases_it_received(session: Tape) -> None:
    said = Agent(session, model="offline", context="phases").run("Where are we?").text
    summary = session.find_anchor("phase/3").state["summary"]  # type: ignore[index]
    assert (
        "The view carries 3 earlier phases (`session/start`, `phase/1`, `phase/2`), "
        f'then starts at anchor `phase/3`, whose summary is "{summary}"'
    ) in said
    plain = Agent(session, model="offline").run("And in the last-anchor view?").text
    assert "The view starts at anchor `phase/3`" in plain and "earlier phase" not in plain
