"""Nothing wrong is ever written: every refusal is one clear error and leaves the tape's entry count unchanged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from harness.shell import Notebook
from IPython.core.error import UsageError

from bub_nb.agent import Agent, tool
from bub_nb.errors import (
    AnchorNameError,
    AnchorNotFoundError,
    BubNbError,
    ContextLengthError,
    TapeNameError,
    TapeNotFoundError,
    ToolError,
)
from bub_nb.tape import Tape, open_tape
from bub_nb.testing import OpenAICompatibleServer

# The shell with bub_nb loaded, and its fixture, are test_magics' own.


# -- validate before writing ---------------------------------------------------------------------


def test_bub_options_are_checked_before_the_first_entry_on_an_empty_tape(nb: Notebook) -> None:
    nb.run("import pandas as pd\ndef takes_df(df: pd.DataFrame) -> int:\n    return len(df)")
    nb.refused("%%bub --context nosuch\nHello", r"^Anchor 'nosuch' was not found")
    nb.refused("%%bub -m nosuch:model\nHello", r"Unknown model spec 'nosuch:model'")
    nb.refused("%%bub -m openai:gpt-4o-mini\nHello", r"needs an API key")
    nb.refused("%%bub --tools nosuch\nHello", r"Tool 'nosuch' is neither a builtin tool")
    nb.refused("%%bub --tools takes_df\nHello", r"Parameter 'df' of 'takes_df' is annotated DataFrame")
    nb.refused("%%bub -o class\nHello", r"-o 'class' is not a valid variable name")
    nb.refused("%%bub\nTell me about {missing}", r"missing")
    nb.refused("%%bub\n,compact now", r"^Unknown command ',compact'")
    nb.refused("%%bub\n,tape.search query=x limit=many", r"limit: 'many' is not of type 'integer'")
    assert len(nb.tape) == 0  # not even session/start


def test_bub_options_are_checked_before_writing_on_a_tape_with_history(nb: Notebook) -> None:
    nb.run("%%bub\nHello")
    nb.refused("%%bub --context nosuch\nAgain", r"^Anchor 'nosuch' was not found")
    nb.run("%%bub\nAnd again")
    user_messages = [e.payload["content"] for e in nb.tape.read(kinds=("message",)) if e.payload["role"] == "user"]
    assert user_messages == ["Hello", "And again"]


def test_an_agent_refuses_a_mode_naming_a_missing_anchor_before_writing(tape: Tape) -> None:
    Agent(tape, "offline").run("Hello")
    before = len(tape)
    with pytest.raises(AnchorNotFoundError, match="Anchor 'phase/nosuch' was not found"):
        Agent(tape, "offline", context="phase/nosuch").run("Hello again")
    assert len(tape) == before


def test_a_prompt_utf8_cannot_store_is_refused_before_writing(tape: Tape, nb: Notebook) -> None:
    Agent(tape, "offline").run("Hello")
    before = len(tape)
    with pytest.raises(BubNbError, match=r"not a character UTF-8 can store; nothing was written"):
        Agent(tape, "offline").run("half a pair: \udc00")
    assert len(tape) == before
    nb.run("odd = '\\udc00'")
    nb.refused("%%bub\nSay {odd}", r"not a character UTF-8 can store")


# -- reserved anchor names -------------------------------------------------------------------------


def test_the_tape_api_refuses_memory_names_for_a_handoff(tape: Tape) -> None:
    tape.memory.save_long_term("likes tea")
    before = len(tape)
    for name in ("memory/open", "memory/seal", "Memory/notes", " memory/x"):
        with pytest.raises(AnchorNameError, match=r"reserved: names starting with 'memory/' belong to the memory zone"):
            tape.handoff(name, {"version": 99})
    assert len(tape) == before
    assert tape.memory.read().long_term == "likes tea"


def test_handoff_magic_refuses_memory_names(nb: Notebook) -> None:
    nb.run("%memory save likes tea")
    nb.refused("%handoff memory/open version=99", r"'memory/' belong to the memory zone")
    nb.refused("%handoff memory/seal version=99", r"'memory/' belong to the memory zone")
    nb.refused("%%bub\n,handoff memory/notes", r"'memory/' belong to the memory zone")
    assert nb.tape.memory.read().long_term == "likes tea"


def test_the_handoff_tool_refuses_memory_names_to_the_model(tape: Tape) -> None:
    from bub_nb.agent.models import ScriptedModel

    model = ScriptedModel([{"tool_calls": [{"name": "tape_handoff", "arguments": {"name": "memory/seal"}}]}, "ok"])
    turn = Agent(tape, model).run("Seal the memory")
    results = [e.payload["results"][0] for e in turn.entries if e.kind == "tool_result"]
    assert "'memory/' belong to the memory zone" in results[0]["message"]
    assert [e.kind for e in turn.entries if e.kind == "anchor"] == []


# -- tape names -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["session_graph", "Session_Graph", "notes.idx", "notes.lock", "notes.bak", "x.jsonl.2"]
)
def test_names_of_the_stores_own_files_are_refused_everywhere(tmp_path: Path, name: str) -> None:
    with pytest.raises(TapeNameError, match=f"Tape name {name!r} is reserved"):
        open_tape(name, home=tmp_path)
    with pytest.raises(TapeNameError, match="is reserved"):
        open_tape(tmp_path / f"{name}.jsonl")
    source = open_tape("source", home=tmp_path)
    source.ensure_bootstrap_anchor()
    with pytest.raises(TapeNameError, match="is reserved"):
        source.fork_session(name)
    assert sorted(p.name for p in (tmp_path / "tapes").glob("*.jsonl")) == ["source.jsonl"]


def test_open_tape_without_create_refuses_a_missing_tape_and_names_near_ones(tmp_path: Path) -> None:
    open_tape("lesson-one", home=tmp_path).ensure_bootstrap_anchor()
    with pytest.raises(TapeNotFoundError, match=r"Tape 'lesson-on' does not exist.*did you mean lesson-one\?"):
        open_tape("lesson-on", home=tmp_path, create=False)
    assert open_tape("lesson-one", home=tmp_path, create=False).name == "lesson-one"
    assert not (tmp_path / "tapes" / "lesson-on.jsonl").exists()


def test_tape_use_refuses_reserved_and_missing_tapes_unless_new(nb: Notebook) -> None:
    nb.run("%%bub\nHello")
    original = nb.tape.name
    nb.refused("%tape use session_graph", r"Tape name 'session_graph' is reserved")
    nb.refused("%tape use nosuch-tape", r"Tape 'nosuch-tape' does not exist")
    nb.refused("%tape fork session_graph", r"Tape name 'session_graph' is reserved")
    assert nb.tape.name == original
    nb.run("%tape use nosuch-tape --new")
    assert nb.tape.name == "nosuch-tape" and len(nb.tape) == 0
    nb.run(f"%tape use {original}")
    assert nb.tape.name == original


# -- endpoint changes ---------------------------------------------------------------------------------


def test_a_changed_base_url_or_key_reaches_the_next_cell(nb: Notebook, monkeypatch: pytest.MonkeyPatch) -> None:
    with (
        OpenAICompatibleServer() as first,
        OpenAICompatibleServer(api_key="key-two") as second,
    ):
        first.reply("From the first endpoint.")
        monkeypatch.setenv("BUB_API_BASE", first.base_url)
        nb.run("%%bub -m openai:test-model -o one\nHello")
        monkeypatch.setenv("BUB_API_BASE", second.base_url)
        monkeypatch.setenv("BUB_API_KEY", "key-one")
        with pytest.raises(UsageError, match="401"):
            nb.run("%%bub -m openai:test-model\nHello again")
        second.reply("From the second endpoint.")
        monkeypatch.setenv("BUB_API_KEY", "key-two")
        nb.run("%%bub -m openai:test-model -o two\nHello at last")
        assert (nb.shell.user_ns["one"], nb.shell.user_ns["two"]) == (
            "From the first endpoint.",
            "From the second endpoint.",
        )
        assert len(first.requests) == 1 and len(second.requests) == 1
        assert "key-two" not in repr(nb.magics.session.model("openai:test-model"))


# -- tool parameters ------------------------------------------------------------------------------------


def test_a_tool_parameter_without_a_json_schema_is_refused_when_the_tool_is_made() -> None:
    def takes_df(df: pd.DataFrame) -> int:
        return len(df)

    def takes_frames(frames: list[pd.DataFrame], label: str = "") -> int:
        return len(frames)

    with pytest.raises(ToolError, match=r"Parameter 'df' of 'test_.*takes_df' is annotated DataFrame"):
        tool(takes_df)
    with pytest.raises(
        ToolError, match=r"Parameter 'frames' .* is annotated list\[pandas(\.core\.frame)?\.DataFrame\]"
    ):
        tool(takes_frames)

    def loose(value: Any, other, name: str | None = None) -> str:  # type: ignore[no-untyped-def]
        return str(value)

    schema = tool(loose).parameters["properties"]
    assert schema == {"value": {}, "other": {}, "name": {"type": ["string", "null"], "default": None}}


# -- overflow is never silent ------------------------------------------------------------------------------


def test_a_prompt_over_the_window_alone_is_refused_with_its_estimate_before_writing(nb: Notebook) -> None:
    nb.run("from bub_nb.agent.models import OfflineModel\nsmall = OfflineModel(context_window=400)")
    nb.run("%%bub -m small\nHello")
    before_anchors = [e.payload["name"] for e in nb.tape.read(kinds=("anchor",))]
    for _ in range(3):
        nb.refused("%%bub -m small\n" + "a very long prompt " * 200, r"prompt alone is ≈ \d+ tokens .* 400-token")
    assert [e.payload["name"] for e in nb.tape.read(kinds=("anchor",))] == before_anchors


def test_an_endpoint_window_learned_from_a_refusal_stops_new_auto_handoffs(tape: Tape) -> None:
    with OpenAICompatibleServer(context_window=150) as server:
        agent = Agent(tape, resolve_openai(server))
        with pytest.raises(ContextLengthError):
            agent.run("Hello " * 50)
        after_first = len(tape)
        for _ in range(2):
            with pytest.raises(ContextLengthError, match=r"prompt alone is ≈ \d+ tokens .* 150-token"):
                agent.run("Hello " * 50)
        assert len(tape) == after_first and len(server.requests) == 1
    assert not [e for e in tape.read(kinds=("anchor",)) if e.payload["name"].startswith("auto_handoff")]


def test_auto_handoff_shows_a_notice_in_the_cell(nb: Notebook, monkeypatch: pytest.MonkeyPatch) -> None:
    with OpenAICompatibleServer() as server:
        monkeypatch.setenv("BUB_API_BASE", server.base_url)
        for number in range(4):
            nb.run(f"%%bub -m openai:test-model\nPart {number}: " + "a long paragraph about tapes " * 40)
        server.context_window = 1000  # the history no longer fits; the prompt after an anchor does
        server.reply("Recovered.")
        nb.run("%%bub -m openai:test-model\nWhat next?")
    anchor = nb.tape.read(kinds=("anchor",))[-1]
    assert anchor.payload["name"] == "auto_handoff/context_overflow"
    notice = nb.shown().splitlines()[-1]
    assert notice.startswith(
        "Warning: The prompt did not fit the model's context: handoff auto_handoff/context_overflow"
    )
    assert f"#{anchor.id} written" in notice and "entries left the view" in notice


def resolve_openai(server: OpenAICompatibleServer) -> Any:
    from bub_nb.agent.models import OpenAIModel

    return OpenAIModel("test-model", base_url=server.base_url, api_key="test", max_retries=0)


# -- usage messages and exact numbers ------------------------------------------------------------------------


def test_bare_tape_and_handoff_say_what_they_need(nb: Notebook) -> None:
    nb.refused("%tape", r"^%tape needs a subcommand: info, df, search")
    nb.refused("%handoff", r"^%handoff needs an anchor NAME")
    with pytest.raises(UsageError) as caught:
        nb.run("%tape")
    assert "rest" not in str(caught.value)


def test_big_integers_stay_exact_in_handoff_state_and_on_the_tape(nb: Notebook) -> None:
    nb.run("%handoff phase/big x=123456789012345678901234567890 --state '{\"y\": -98765432109876543210987}'")
    state = nb.tape.read(kinds=("anchor",))[-1].payload["state"]
    assert state == {"x": 123456789012345678901234567890, "y": -98765432109876543210987}
    reopened = open_tape(nb.tape.path)
    assert reopened.read(kinds=("anchor",))[-1].payload["state"] == state
