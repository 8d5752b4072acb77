"""``%tape retract`` / ``%tape unretract`` and the comma form on a real IPython shell, and who may retract."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from harness.shell import Notebook

from bub_nb.agent import Agent
from bub_nb.agent.tools import OPT_IN, model_builtins
from bub_nb.tape.events import RETRACT


def prompt_and_answer(nb: Notebook, words: str) -> tuple[int, int]:
    """The ids of the user message and the answer of the turn whose prompt holds ``words``."""
    entries = nb.tape.read()
    prompt = next(e for e in entries if e.kind == "message" and words in str(e.payload.get("content")))
    answer = next(e for e in entries if e.id > prompt.id and e.kind == "message" and e.payload["role"] == "assistant")
    return prompt.id, answer.id


def test_retract_leaves_a_wrong_turn_out_of_the_next_view_and_the_diff_shows_the_tokens_freed(nb: Notebook) -> None:
    nb.run("%%bub\nHere are my notes: " + "a long list of figures that were all wrong " * 10)
    nb.run("%%bub\nNow the real question")
    first, last = prompt_and_answer(nb, "figures that were all wrong")
    nb.run(f"%tape retract {first}-{last} --reason 'wrong figures'")
    said = nb.shown()
    assert f"Retracted #{first}–#{last}" in said and "%context --diff turn:-1 last" in said
    event = nb.tape.read()[-1]
    assert event.name == RETRACT and event.payload["data"]["reason"] == "wrong figures"
    assert not {first, last} & set(nb.tape.view().entry_ids)
    assert {first, last} <= set(nb.tape.view_of_turn(-1).entry_ids)  # the last turn did send them

    nb.displays.outputs.clear()
    nb.run("%context --diff turn:-1 last")
    summary = next(line for line in nb.shown().splitlines() if line.startswith("Context diff turn"))
    assert "2 left (2 retracted)" in summary
    assert int(re.search(r"([+-]\d+) tokens", summary).group(1)) < -50  # type: ignore[union-attr]

    nb.run("%%bub\nWhat do you see now?")
    assert "figures that were all wrong" not in str(nb.tape.view_of_turn(-1).messages)

    nb.run(f"%tape unretract {first}-{last}")
    assert "Brought back" in nb.shown() and {first, last} <= set(nb.tape.view().entry_ids)
    assert not nb.tape.to_frame()["retracted"].any()


def test_bad_retractions_are_one_line_refusals_that_write_nothing(nb: Notebook) -> None:
    nb.run("%%bub\nHello")
    nb.refused("%tape retract 1", "anchors cannot be retracted")
    nb.refused("%tape retract 2", "never reaches a request")
    nb.refused("%tape retract 9-3", "runs backwards")
    nb.refused("%tape retract 999", "is not on tape")
    prompt = next(e for e in nb.tape.read() if e.kind == "message")
    nb.refused(f"%tape unretract {prompt.id}", "retracted, so there is nothing to unretract")
    nb.run(f"%tape retract {prompt.id}")
    nb.refused(f"%tape retract {prompt.id}", "already retracted")


def test_the_comma_form_retracts_as_a_person_asks(nb: Notebook) -> None:
    nb.run("%%bub\nHello")
    prompt = next(e for e in nb.tape.read() if e.kind == "message")
    nb.run(f',retract {prompt.id} reason="typo"')
    assert prompt.id in nb.tape.retracted()
    nb.run(f",tape.unretract entries={prompt.id}")
    assert nb.tape.retracted() == frozenset()


def test_a_model_is_given_retraction_only_when_the_user_names_it(nb: Notebook) -> None:
    assert not OPT_IN & set(model_builtins(True).names)
    assert not OPT_IN & set(model_builtins(["tape.*"]).names)
    assert set(model_builtins(["tape.retract"]).names) == {"tape.retract"}
    session = nb.magics.session
    for spec, given in ((None, set()), ("tape.*", set()), ("tape.retract", {"tape.retract"})):
        options = session.agent_options(tools=spec)
        agent = Agent(nb.tape, options.model, tools=options.tools, builtin_tools=options.builtin_tools)
        assert OPT_IN & set(agent.tools.names) == given, spec


def test_the_context_view_marks_retracted_entries(nb: Notebook) -> None:
    from bub_nb.notebook.widgets import ContextView

    nb.run("%%bub\nHello")
    prompt = next(e for e in nb.tape.read() if e.kind == "message")
    nb.tape.retract(prompt.id)
    view = ContextView(nb.tape, "full")
    assert f'bub-retracted" data-entry-id="{prompt.id}"' in view.to_html()
    assert f"retracted, so left out: #{prompt.id}" in view.to_text() and "~ retracted" in view.to_text()


def test_a_retraction_before_any_turn_points_at_the_view_not_at_a_turn_that_does_not_exist(nb: Notebook) -> None:
    message = nb.tape.append_message({"role": "user", "content": "a note typed by hand"})
    nb.run(f"%tape retract {message.id}")
    said = nb.shown()
    assert "`%context` shows the view without them" in said and "turn:-1" not in said


def _endpoint(nb: Notebook, server: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("BUB_API_BASE", server.base_url)
    monkeypatch.setenv("BUB_API_KEY", "test-key-not-secret")
    nb.run('%config BubMagics.model = "openai:test-model"')
    return server


def test_a_retracted_entry_never_comes_back_through_tape_search(
    nb: Notebook, openai_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoint = _endpoint(nb, openai_server, monkeypatch)
    endpoint.reply("Stored.")
    nb.run("%%bub\nremember AAA-SECRET-MSG for later")
    first, _ = prompt_and_answer(nb, "AAA-SECRET-MSG")
    nb.run(f"%tape retract {first}")
    endpoint.reply_tool_calls([{"name": "tape_search", "arguments": {"query": "AAA-SECRET"}}]).reply("Nothing.")
    nb.run("%%bub\nWhat did I ask you to remember?")
    bodies = [json.dumps(request) for request in endpoint.requests[-2:]]
    assert all("AAA-SECRET-MSG" not in body for body in bodies)
    result = next(m for m in endpoint.last_request["messages"] if m["role"] == "tool")
    assert result["content"] == "(1 retracted entries match and are left out)"
    nb.run(f"%tape unretract {first}")
    endpoint.reply_tool_calls([{"name": "tape_search", "arguments": {"query": "AAA-SECRET"}}]).reply("Found.")
    nb.run("%%bub\nAnd now?")
    result = [m for m in endpoint.last_request["messages"] if m["role"] == "tool"][-1]
    assert f"#{first} message" in result["content"] and "AAA-SECRET-MSG" in result["content"]


def test_a_recorded_cell_and_a_long_term_note_can_be_retracted_out_of_every_later_request(
    nb: Notebook, openai_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoint = _endpoint(nb, openai_server, monkeypatch)
    nb.run("%tape record on")
    nb.run("cell_secret = 'CELL-SECRET-42'")
    nb.run("%tape record off")
    nb.run("%memory save The deploy key is MEMO-SECRET-77")
    endpoint.reply("Seen.")
    nb.run("%%bub --context notebook\nWhat ran?")
    sent = json.dumps(endpoint.last_request)
    assert "CELL-SECRET-42" in sent and "MEMO-SECRET-77" in sent
    cell = next(e for e in nb.tape.read() if e.kind == "event" and e.name == "notebook.cell")
    note = next(e for e in nb.tape.read() if e.kind == "event" and e.name == "memory.long_term")

    nb.run(f"%tape retract {cell.id}")
    nb.run(f"%tape retract {note.id}")

    endpoint.reply("Nothing.")
    nb.run("%%bub --context notebook\nWhat ran now?")
    sent = json.dumps(endpoint.last_request)
    assert "CELL-SECRET-42" not in sent and "MEMO-SECRET-77" not in sent
    nb.run(f"%tape unretract {note.id}")
    endpoint.reply("Back.")
    nb.run("%%bub\nAnd the memory?")
    assert "MEMO-SECRET-77" in json.dumps(endpoint.last_request)
