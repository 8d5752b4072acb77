"""Hostile text on every surface of a real shell: each display publishes cleaned HTML and plain text, never Markdown.

The model is ``HostileModel``: its replies carry the whole corpus of ``harness.hostile_text``, and it hands off
under an anchor name and a summary of its choosing. A colleague's tape adds an entry whose kind is an attribute
breakout. What the shell displays is read back from its display publisher.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from harness.hostile_model import HostileModel, Move
from harness.hostile_text import CONTROL_CHARACTERS, PAYLOADS, markup_problems, one_text
from harness.shell import Notebook

import bub_nb.notebook.display as displays
from bub_nb.notebook.display import SHOWN_LIMIT

TEXT = one_text("http://127.0.0.1:9")
NAME = "phase/<img src=x onerror=alert(1)>`x`**[y](javascript:alert(1))**"


def published(nb: Notebook) -> list[dict[str, Any]]:
    return [output["data"] for output in nb.displays.outputs]


def assert_clean(bundles: list[dict[str, Any]]) -> None:
    assert bundles
    for data in bundles:
        assert "text/markdown" not in data, data
        html = str(data.get("text/html", ""))
        assert markup_problems(html) == [], html[:2000]
        assert not set(str(data.get("text/plain", ""))) & CONTROL_CHARACTERS


@pytest.fixture
def rich(nb: Notebook, monkeypatch: pytest.MonkeyPatch) -> Notebook:
    """The shell as a notebook front end sees it: answers displayed, not printed."""
    monkeypatch.setattr(displays, "rich_frontend", lambda shell: True)
    handoff = json.dumps({"name": NAME, "summary": f"{TEXT} [#1]"})
    nb.shell.user_ns["hostile"] = HostileModel(
        [
            Move("calls", "", calls=(("tape_handoff", handoff),)),
            Move("text", TEXT),
            Move("text", TEXT),
        ]
    )
    return nb


def test_hostile_replies_names_and_summaries_display_only_clean_html(rich: Notebook) -> None:
    rich.run("%%bub -m hostile\nstreamed")
    rich.run("%%bub -m hostile --no-stream\nat once")
    assert rich.tape.find_anchor(NAME) is not None  # the model's name was written as it chose it
    for line in ("%tape info", "%anchors", "%context", "%context --diff full last-anchor", "%context --turn -1"):
        result = rich.run(line)
        if result is not None:
            rich.shell.display_pub.publish(rich.shell.display_formatter.format(result)[0])
    summary = f"Summary:\n{TEXT} [#{rich.tape.last_id - 1}]\n\nNext steps:\nGo on."  # cites what it quotes
    rich.shell.user_ns["hostile"] = HostileModel([Move("text", summary)])
    rich.run("%handoff phase/two --summarize -m hostile")
    rich.shell.display_pub.publish(rich.shell.display_formatter.format(rich.tape)[0])
    bundles = published(rich)
    assert_clean(bundles)
    html = "\n".join(str(data.get("text/html", "")) for data in bundles)
    assert "&lt;script&gt;window.__pwned" in html  # the payloads are shown, as text
    assert "&lt;img src=x onerror=alert(1)&gt;" in html  # the anchor name too


def test_the_context_widget_shows_a_replys_control_characters_as_markers_in_its_plain_text(nb: Notebook) -> None:
    """Where no widget manager runs (a terminal, the state machine's shell), a widget's text is what is shown."""
    controls = next(payload for payload in PAYLOADS if "\x1b]52" in payload)
    nb.shell.user_ns["hostile"] = HostileModel([Move("text", controls)])
    nb.run("%%bub -m hostile\nshow me")
    shown = len(nb.displays.outputs)
    nb.run("%context")
    bundles = published(nb)[shown:]
    assert any("application/vnd.jupyter.widget-view+json" in data for data in bundles)
    assert_clean(bundles)
    assert any("␛]52;c;cHduZWQ=␇" in str(data.get("text/plain", "")) for data in bundles)


def test_a_hostile_kind_on_a_colleagues_tape_stays_out_of_every_class(rich: Notebook) -> None:
    rich.run("%%bub -m hostile --no-stream\nhello")
    path = rich.tape.location
    kind = "x' onmouseover='alert(1)' data-x='"
    line = {"id": rich.tape.last_id + 1, "kind": kind, "payload": {"content": TEXT}, "meta": {}, "date": "2026-01-01"}
    with open(path, "a", encoding="utf-8") as file:
        file.write(json.dumps(line) + "\n")
    rich.run("%tape use " + rich.tape.name)
    for line_magic in ("%context full", "%context --diff full last-anchor"):
        result = rich.run(line_magic)
        if result is not None:
            rich.shell.display_pub.publish(rich.shell.display_formatter.format(result)[0])
    entries = rich.tape.read()
    for entry in entries:
        rich.shell.display_pub.publish(rich.shell.display_formatter.format(entry)[0])
    bundles = published(rich)
    assert_clean(bundles)
    html = "\n".join(str(data.get("text/html", "")) for data in bundles)
    assert "bub-kind-other" in html and "class=\"x'" not in html and "bub-kind-x" not in html


def test_a_huge_answer_is_shown_bounded_with_a_note(rich: Notebook) -> None:
    rich.shell.user_ns["huge"] = HostileModel([Move("text", "word " * 60_000)])
    rich.run("%%bub -m huge\nsay a lot")
    final = published(rich)[-1]
    assert "more characters, see the tape" in final["text/html"]
    assert f"{300_000 - SHOWN_LIMIT:,} more characters" in final["text/plain"]
    assert len(final["text/plain"]) < SHOWN_LIMIT + 2_000
    answers = [e for e in rich.tape.read() if e.kind == "message" and e.payload.get("role") == "assistant"]
    assert len(answers[-1].payload["content"]) == 300_000  # the whole answer is on the tape


def test_the_approval_shows_hidden_characters_as_markers_under_a_warning() -> None:
    import asyncio

    from bub_nb.notebook.widgets.code_approval import CodeApproval

    code = 'access = "user\u202e \u2066# admin\u2069 \u2066"\u200b\x1b[2K'

    async def build() -> CodeApproval:
        return CodeApproval(code)

    approval = asyncio.run(build())
    shown = [child.value for child in approval.widget.children if hasattr(child, "value")]
    warning, code_html = shown[1], shown[2]
    assert "Warning" in warning and "5 invisible or direction-changing" in warning
    assert "⟦U+202E⟧" in code_html and "⟦U+2066⟧" in code_html and "⟦U+200B⟧" in code_html and "␛[2K" in code_html
    assert not set(code_html) & ({"\u202e", "\u2066", "\u2069", "\u200b"} | CONTROL_CHARACTERS)
