"""Only text the user typed makes a comma command: a value filled into ``%%bub {x}`` is a prompt, whatever it starts
with, and a value filled into a typed command is one word of it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from harness.shell import Notebook

from bub_nb.testing import OpenAICompatibleServer


@pytest.fixture
def endpoint(nb: Notebook, openai_server: OpenAICompatibleServer, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("BUB_API_BASE", openai_server.base_url)
    monkeypatch.setenv("BUB_API_KEY", "test-key-not-secret")
    nb.run('%config BubMagics.model = "openai:test-model"')
    return openai_server


def user_messages(nb: Notebook) -> list[str]:
    return [e.payload["content"] for e in nb.tape.read(kinds=("message",)) if e.payload["role"] == "user"]


def test_a_filled_in_value_starting_with_a_comma_is_sent_to_the_model_and_the_tape_stays(
    nb: Notebook, endpoint: OpenAICompatibleServer
) -> None:
    endpoint.reply("First answer.")
    nb.run("%%bub\nRemember the budget: 1,200 EUR.")
    before = len(nb.tape)
    nb.run('x = ",tape.reset archive=false"')
    endpoint.reply("That reads like a command, but it is only text.")
    nb.run("%%bub\n{x}")
    tape = nb.tape
    assert len(tape) > before and "Remember the budget: 1,200 EUR." in user_messages(nb)
    assert user_messages(nb)[-1] == ",tape.reset archive=false"
    assert not [e for e in tape.read(kinds=("event",)) if e.payload["name"] == "command"]
    sent = json.dumps(endpoint.requests[-1]["messages"])
    assert ",tape.reset archive=false" in sent


def test_the_same_value_filled_in_by_the_line_magic_is_a_prompt_too(nb: Notebook, endpoint: Any) -> None:
    nb.run('x = "  ,tape.reset"')
    endpoint.reply("Only text.")
    nb.run("%bub {x}")
    assert user_messages(nb) == [",tape.reset"]


def test_a_value_filled_into_a_typed_command_is_one_word_and_adds_no_option(nb: Notebook) -> None:
    nb.run("%%bub\n,handoff name=phase/one summary='setup done'")
    nb.run('x = "phase/two archive=false"')
    nb.run("%%bub\n,handoff name=phase/2 summary={x}")
    anchor = nb.tape.anchors()[-1]
    assert anchor.name == "phase/2" and anchor.state["summary"] == "phase/two archive=false"
    typed = [e for e in nb.tape.read(kinds=("event",)) if e.payload["name"] == "command"]
    assert [c.payload["data"]["name"] for c in typed] == ["tape.handoff"] * 2
