"""Replay on another model: the recorded prompts sent again on a fork, the source tape never written."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from harness.notebooks import execute
from harness.shell import Notebook

from bub_nb import Agent, open_tape, replay
from bub_nb.agent import OpenAIModel, tool
from bub_nb.agent.replay import REPLAY_COLUMNS, recorded_turns
from bub_nb.errors import AnchorNotFoundError, BubNbError, ModelConfigError, ReplayError, TapeError, TapeNameError
from bub_nb.tape import Tape
from bub_nb.testing import OpenAICompatibleServer

PROMPTS = ("Hello, what do you see?", "Where does your view start now?", "And what do you inherit?")


def recorded_session(tape: Tape) -> None:
    """Three offline turns with a handoff after the first, as a lesson writes them."""
    agent = Agent(tape, "offline")
    agent.run(PROMPTS[0])
    tape.handoff("lesson/1", {"summary": "we said hello"})
    agent.run(PROMPTS[1])
    agent.run(PROMPTS[2])


def user_prompts(tape: Tape) -> list[str]:
    return [
        e.payload["content"]
        for e in tape.read(kinds=("message",))
        if e.payload.get("role") == "user" and not e.meta.get("retry")
    ]


def test_replaying_the_quickstart_on_offline_gives_one_row_per_prompt_and_leaves_its_tape_byte_for_byte(
    tmp_path: Path,
) -> None:
    run = execute("quickstart.ipynb", tmp_path)
    source = run.tape
    assert source.path is not None
    before = source.path.read_bytes()
    prompts = user_prompts(source)

    frame = replay(source, model="offline")

    assert source.path.read_bytes() == before
    assert list(frame.columns) == list(REPLAY_COLUMNS)
    assert frame["prompt"].tolist() == prompts and len(prompts) == 3
    assert frame["original_answer"].notna().all() and frame["replay_answer"].notna().all()
    fork = open_tape(frame.attrs["fork"], home=tmp_path / "home")
    assert user_prompts(fork) == prompts
    assert frame["replay_id"].tolist() == [
        e.id for e in fork.read(kinds=("message",)) if e.payload.get("role") == "user"
    ]
    # The handoff between the turns reached the fork, so the second turn's view started at it, as it did.
    assert "lesson/1" in fork.anchor_names()
    assert all(
        e.meta.get("replay_of", "").startswith(f"tape://{source.name}/entry/") for e in fork.read(kinds=("system",))
    )


def test_replay_rebuilds_each_view_by_the_same_mode_and_flags_the_first_different_answer(tape: Tape) -> None:
    recorded_session(tape)
    before = tape.path.read_bytes() if tape.path else b""

    frame = replay(tape, model="offline", into="again")

    fork = open_tape(tape.path.parent / "again.jsonl") if tape.path else None
    assert fork is not None and tape.path is not None and tape.path.read_bytes() == before
    # The offline model describes its view; a view rebuilt the same way gives the same answer.
    assert frame["same"].all() and not frame["first_difference"].any()
    assert frame["original_answer"].str.contains("lesson/1").tolist() == [False, True, True]
    assert (frame["replay_tokens_in"] > 0).all() and (frame["replay_tokens_out"] > 0).all()
    assert (frame["replay_ms"] > 0).all() and frame["replay_status"].eq("ok").all()
    assert [r["child"] for r in tape.lineage() if r.get("replay") == "offline"] == ["again"]


def test_replay_from_an_anchor_sends_only_the_prompts_after_it(tape: Tape) -> None:
    recorded_session(tape)

    frame = replay(tape, model="offline", from_anchor="lesson/1")

    assert frame["prompt"].tolist() == list(PROMPTS[1:])
    fork = open_tape(frame.attrs["fork"], store=tape.base_store)
    assert next(n for n in fork.anchor_names() if not n.startswith("memory/")) == "lesson/1"
    assert frame.attrs["fork"] == f"{tape.name}__replay__offline"
    again = replay(tape, model="offline", from_anchor="lesson/1")
    assert again.attrs["fork"] == f"{tape.name}__replay__offline-2"


def test_replay_on_an_endpoint_sends_the_recorded_prompts_and_runs_tools_on_the_fork(
    tape: Tape, openai_server: OpenAICompatibleServer, model: OpenAIModel
) -> None:
    recorded_session(tape)
    source_anchors = tape.anchor_names()
    openai_server.reply("hi", usage={"prompt_tokens": 11, "completion_tokens": 2, "total_tokens": 13})
    openai_server.reply_tool_calls([{"name": "tape_handoff", "arguments": {"name": "replay/mark", "summary": "x"}}])
    openai_server.reply("marked", usage={"prompt_tokens": 30, "completion_tokens": 3, "total_tokens": 33})
    openai_server.reply("the end")

    frame = replay(tape, model=model, into="on-endpoint")

    sent = [
        next((m["content"] for m in reversed(request["messages"]) if m["role"] == "user"), None)
        for request in openai_server.requests
    ]
    # The tool's handoff starts a new phase mid-turn: the step after it sees the anchor, not the prompt.
    assert sent == [PROMPTS[0], PROMPTS[1], None, PROMPTS[2]]
    assert frame["replay_answer"].tolist() == ["hi", "marked", "the end"]
    assert frame["first_difference"].tolist() == [True, False, False]
    assert frame.loc[0, ["replay_tokens_in", "replay_tokens_out"]].tolist() == [11, 2]
    fork = open_tape("on-endpoint", store=tape.base_store)
    assert "replay/mark" in fork.anchor_names()
    assert tape.anchor_names() == source_anchors
    # The third prompt's view starts at the anchor the tool wrote on the fork, as the rules say.
    third = openai_server.requests[3]["messages"]
    assert any("[Anchor created: replay/mark]" in str(m.get("content")) for m in third)


def test_an_endpoint_error_is_a_row_and_stops_the_replay(
    tape: Tape, openai_server: OpenAICompatibleServer, model: OpenAIModel
) -> None:
    recorded_session(tape)
    before = tape.path.read_bytes() if tape.path else b""
    openai_server.reply("first")
    openai_server.fail(400, "The model `test-model` does not exist")

    frame = replay(tape, model=model, into="broken")

    assert frame["replay_status"].tolist() == ["ok", "error"]
    assert "does not exist" in frame.loc[1, "replay_error"] and "\n" not in frame.loc[1, "replay_error"]
    assert pd.isna(frame.loc[1, "replay_answer"]) and not frame.loc[1, "same"]
    assert frame["first_difference"].tolist() == [True, False]
    assert frame.attrs["stopped"].startswith("The replay stopped at prompt #")
    assert len(openai_server.requests) == 2
    assert tape.path is not None and tape.path.read_bytes() == before


def test_an_interrupt_keeps_the_fork_as_far_as_it_got_and_goes_on(
    tape: Tape, openai_server: OpenAICompatibleServer, model: OpenAIModel
) -> None:
    recorded_session(tape)
    before = tape.path.read_bytes() if tape.path else b""

    @tool
    def slow_lookup(query: str) -> str:
        """Look something up (the user presses Ctrl-C while it runs)."""
        raise KeyboardInterrupt

    openai_server.reply("first")
    openai_server.reply_tool_calls([{"name": "slow_lookup", "arguments": {"query": "x"}}])

    with pytest.raises(KeyboardInterrupt):
        replay(tape, model=model, into="stopped", tools=[slow_lookup])

    fork = open_tape("stopped", store=tape.base_store)
    runs = [e.payload["data"]["status"] for e in fork.read(kinds=("event",)) if e.name == "run"]
    assert runs == ["ok", "interrupted"]
    assert [e.payload["kind"] for e in fork.read(kinds=("error",))][-1] == "interrupted"
    assert tape.path is not None and tape.path.read_bytes() == before


@pytest.mark.parametrize(
    ("options", "error", "words"),
    [
        ({"model": "nonsense:spec"}, ModelConfigError, "Unknown model spec 'nonsense:spec'"),
        ({"model": "openai:gpt-4o-mini"}, ModelConfigError, "needs an API key"),
        ({"model": "offline", "from_anchor": "lesson/9"}, AnchorNotFoundError, "lesson/9"),
        ({"model": "offline", "into": "a/b"}, TapeNameError, "'a/b'"),
        ({"model": "offline", "into": "taken"}, TapeError, "'taken' already exists"),
        ({"model": "offline", "context": "window:0"}, Exception, "window:0"),
        ({"model": "offline", "max_steps": 0}, BubNbError, "max_steps must be a whole number of at least 1, got 0"),
        ({"model": "offline", "builtin_tools": ["nope.*"]}, BubNbError, "nope"),
    ],
)
def test_a_bad_replay_is_refused_before_anything_is_written(
    tape: Tape, options: dict[str, object], error: type[Exception], words: str
) -> None:
    recorded_session(tape)
    open_tape("taken", store=tape.base_store, create=True).handoff("x")
    tapes = sorted(tape.base_store.list_tapes())
    before = tape.path.read_bytes() if tape.path else b""

    with pytest.raises(error, match=words.replace("(", r"\(").replace("[", r"\[")):
        replay(tape, **options)  # type: ignore[arg-type]

    assert sorted(tape.base_store.list_tapes()) == tapes
    assert tape.path is not None and tape.path.read_bytes() == before


def test_a_tape_without_prompts_has_nothing_to_replay(tape: Tape) -> None:
    recorded_session(tape)
    tape.handoff("later")
    with pytest.raises(ReplayError, match="no recorded prompt after anchor 'later'"):
        replay(tape, model="offline", from_anchor="later")


def test_a_command_is_not_a_turn_and_a_tool_writes_stay_inside_their_turn(tape: Tape) -> None:
    agent = Agent(tape, "offline")
    agent.run("remember: tea")
    agent.run(",anchors")
    turns = recorded_turns(tape.read())
    assert [t.prompt for t in turns] == ["remember: tea"]
    memory = [e.id for e in tape.read(kinds=("anchor",)) if (e.name or "").startswith("memory/")]
    assert all(turns[0].first_id < i < turns[0].last_id for i in memory[-2:])


def test_tape_replay_returns_the_rows_and_names_the_fork(nb: Notebook) -> None:
    nb.run("%%bub\nhello")
    nb.run("%handoff lesson/1 summary=hi")
    nb.run("%%bub\nwhere does your view start?")
    source = nb.tape
    before = source.path.read_bytes()

    frame = nb.run("%tape replay -m offline --into lesson-replay")

    assert frame["prompt"].tolist() == ["hello", "where does your view start?"]
    assert "Replayed 2 prompts of" in nb.shown() and "`lesson-replay`" in nb.shown()
    assert nb.tape is source and source.path.read_bytes() == before  # the notebook stays on its tape
    assert nb.run("%tape replay -m offline --from lesson/1")["prompt"].tolist() == ["where does your view start?"]


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("%tape replay", "the following arguments are required: -m/--model"),
        ("%tape replay -m offline --from nowhere", "Anchor 'nowhere' was not found"),
        ("%tape replay -m offline --into ../up", "Tape name '../up' is not allowed"),
        ("%tape replay -m nonsense:x", "Unknown model spec 'nonsense:x'"),
    ],
)
def test_a_bad_tape_replay_is_one_usage_error(nb: Notebook, line: str, words: str) -> None:
    nb.run("%%bub\nhello")
    tapes = sorted(nb.tape.base_store.list_tapes())
    nb.refused(line, words)
    assert sorted(nb.tape.base_store.list_tapes()) == tapes


def test_a_turn_that_recorded_its_view_mode_is_replayed_under_that_mode(tape: Tape) -> None:
    Agent(tape, "offline").run(PROMPTS[0])
    tape.handoff("lesson/1", {"summary": "we said hello"})
    meta = {"run_id": "recorded-full"}
    tape.append_system("You are a helpful agent.", **meta)
    tape.append_message({"role": "user", "content": PROMPTS[1]}, **meta)
    tape.append_message({"role": "assistant", "content": "I saw everything."}, **meta)
    tape.append_event("run", {"status": "ok", "usage": None, "model": "elsewhere", "view": {"mode": "full"}}, **meta)

    frame = replay(tape, model="offline")

    # Under "full" the second view holds the first turn too (two user messages); under "last" it would hold one.
    assert "I received 6 messages: 1 system, 2 user, 3 assistant" in frame.loc[1, "replay_answer"]
    assert "I received 3 messages: 1 system, 1 user, 1 assistant" in frame.loc[0, "replay_answer"]
