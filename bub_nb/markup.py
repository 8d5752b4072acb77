"""The one way outside text is shown: as Markdown rendered with raw HTML off and cleaned against an allow-list,
as HTML bub_nb wrote around escaped values and cleaned the same way, or as plain text with its control characters
made visible.

Everything a model, a tape, a log, a tool or a server wrote is hostile. JupyterLab renders a kernel's
``text/markdown`` and ``text/html`` from the running session as trusted, scripts and all, and ipywidgets' ``HTML``
sets ``innerHTML`` as it is; so nothing bub_nb displays is left to the front end to clean:

- :func:`markdown_html` renders Markdown with ``markdown-it-py`` (raw HTML off, so ``<script>`` in a reply stays
  text) and cleans the result with ``nh3`` (Ammonia): no ``script``/``style``/``iframe``/``object``/``embed``/
  ``svg``/``math``/``form``/``input``, no event or ``style`` attribute, links only to ``http(s)``, ``mailto`` and
  relative addresses, each with ``rel="noopener noreferrer nofollow"``. Images are not rendered at all: a remote
  image loads with no click, so it is a beacon that tells a server the reply was read and carries whatever a prompt
  injection puts in its address; a relative one is a request to the Jupyter server with the user's cookies.
  ``![alt](url)`` shows as a link to the image instead, followed only on a click.
- :func:`clean_html` cleans HTML bub_nb built itself (widgets, tables): the same allow-list plus ``class``,
  ``data-*`` and ``title`` attributes and a few layout properties in ``style``. The values bub_nb puts in it are
  escaped first; cleaning again is the net under that rule.
- :func:`visible_controls` is for terminals: C0 and C1 control characters (escape sequences among them) become
  visible markers, keeping only newlines and tabs.
- A lone surrogate, which a tape can hold but no UTF-8 display can carry, becomes a visible marker in all three
  (:func:`visible_surrogates`).
- :class:`Shown` is what a display publishes: cleaned ``text/html`` and a ``text/plain`` fallback, never
  ``text/markdown``.

This module imports nothing of IPython, so text-only layers display through it too.
"""

from __future__ import annotations

import html
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any, Final

import nh3
from markdown_it import MarkdownIt

_MARKDOWN_TAGS: Final = frozenset(
    {
        "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "details", "div", "dl", "dt", "em",
        "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "kbd", "li", "ol", "p", "pre", "s", "small", "span",
        "strong", "sub", "summary", "sup", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul",
    }
)  # fmt: skip
"""Tags a rendered answer may hold: text structure only (no ``img``, media, forms, frames, scripts or styles)."""

_WIDGET_TAGS: Final = _MARKDOWN_TAGS | {"button", "caption", "col", "colgroup", "label", "section", "u"}
"""Tags bub_nb's own HTML uses beside them."""

_URL_SCHEMES: Final = frozenset({"http", "https", "mailto"})

_MARKDOWN_ATTRIBUTES: Final = {
    "a": {"href", "title"},
    "abbr": {"title"},
    "ol": {"start"},
    "td": {"style", "colspan", "rowspan"},
    "th": {"style", "colspan", "rowspan"},
}
"""markdown-it writes ``style="text-align:…"`` on table cells; only ``text-align`` survives in it."""

_WIDGET_ATTRIBUTES: Final = {
    "*": {"class", "title", "style", "id", "role", "tabindex", "colspan", "rowspan", "onclick"},
    **{
        tag: {*names, "class", "title", "style", "id", "role", "tabindex", "onclick"}
        for tag, names in _MARKDOWN_ATTRIBUTES.items()
    },
}
"""``onclick`` survives only as one of bub_nb's own handlers (:func:`own_handler`), never from outside text."""

_OWN_HANDLERS: set[str] = set()


def own_handler(script: str) -> str:
    """Register a constant click handler bub_nb writes into its own HTML (a sortable header): cleaning keeps an
    ``onclick`` only when it is exactly one of these."""
    _OWN_HANDLERS.add(script)
    return script


_MARKDOWN_STYLE: Final = frozenset({"text-align"})
_WIDGET_STYLE: Final = frozenset(
    {"text-align", "width", "height", "left", "right", "top", "min-width", "max-width", "background-color", "color"}
)
_LINK_REL: Final = "noopener noreferrer nofollow"

_CLASS_TOKEN: Final = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}\Z")
_ID_TOKEN: Final = re.compile(r"bub-[A-Za-z0-9_-]{1,64}\Z")


def _attribute_filter(element: str, attribute: str, value: str) -> str | None:
    """Classes stay only as plain names (a class cannot carry a quote or a script), ids only as ``bub-…``."""
    if attribute == "class":
        kept = [token for token in value.split() if _CLASS_TOKEN.match(token)]
        return " ".join(kept) or None
    if attribute == "id":
        return value if _ID_TOKEN.match(value) else None
    if attribute.startswith("on"):
        return value if value in _OWN_HANDLERS else None
    return value


_SURROGATES: Final = re.compile("[\ud800-\udfff]")


def _surrogate_marker(match: re.Match[str]) -> str:
    return f"⟦U+{ord(match.group(0)):04X}⟧"


def visible_surrogates(text: str) -> str:
    """``text`` with every lone surrogate (a tape or a model may hold one; no UTF-8 display, HTML cleaner or
    terminal can carry it) shown as a marker, ``⟦U+D800⟧``, as an invisible character is."""
    return _SURROGATES.sub(_surrogate_marker, text)


def clean_markdown_html(rendered: str) -> str:
    """HTML rendered from outside Markdown, cleaned against the answers' allow-list."""
    return nh3.clean(
        visible_surrogates(rendered),
        tags=set(_MARKDOWN_TAGS),
        attributes={tag: set(names) for tag, names in _MARKDOWN_ATTRIBUTES.items()},
        url_schemes=set(_URL_SCHEMES),
        link_rel=_LINK_REL,
        filter_style_properties=set(_MARKDOWN_STYLE),
        strip_comments=True,
    )


def clean_html(markup: str) -> str:
    """HTML bub_nb wrote (with escaped values in it), cleaned against the widgets' allow-list."""
    return nh3.clean(
        visible_surrogates(markup),
        tags=set(_WIDGET_TAGS),
        attributes={tag: set(names) for tag, names in _WIDGET_ATTRIBUTES.items()},
        generic_attribute_prefixes={"data-", "aria-"},
        attribute_filter=_attribute_filter,
        url_schemes=set(_URL_SCHEMES),
        link_rel=_LINK_REL,
        filter_style_properties=set(_WIDGET_STYLE),
        strip_comments=True,
    )


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    parser = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    parser.enable("table").enable("strikethrough")
    parser.add_render_rule("image", _image_as_link)
    return parser


def _image_as_link(renderer: Any, tokens: Any, index: int, options: Any, env: Any) -> str:
    """``![alt](url)`` as a link to the image: nothing loads until it is clicked."""
    token = tokens[index]
    alt = renderer.renderInlineAsText(token.children or [], options, env) or "image"
    return f'<a href="{escape(token.attrGet("src") or "")}">{escape(alt)}</a>'


def markdown_html(markdown: str) -> str:
    """``markdown`` (outside text in it or not) as HTML that runs nothing and loads nothing."""
    return clean_markdown_html(_parser().render(markdown))


def markdown_inline_html(markdown: str) -> str:
    """One line of Markdown as inline HTML (no paragraph around it), cleaned the same way."""
    return clean_markdown_html(_parser().renderInline(markdown))


def escape(value: object) -> str:
    """A value as HTML text (quotes too, so it may sit in an attribute)."""
    return html.escape(str(value), quote=True)


_KIND_CLASSES: Final = frozenset({"message", "system", "anchor", "event", "tool_call", "tool_result", "error"})
_ROLE_CLASSES: Final = frozenset({"system", "developer", "user", "assistant", "tool"})


def kind_class(kind: object, prefix: str = "bub-kind-") -> str:
    """The CSS class of an entry's kind: one of a fixed set (``bub-kind-other`` for any kind a tape invents)."""
    return prefix + (kind if isinstance(kind, str) and kind in _KIND_CLASSES else "other")


def role_class(role: object, prefix: str = "bub-role-") -> str:
    """The CSS class of a message's role: one of a fixed set (``bub-role-other`` for any other)."""
    return prefix + (role if isinstance(role, str) and role in _ROLE_CLASSES else "other")


_MARKDOWN_SPECIAL: Final = re.compile(r"([\\`*_\[\]|<>~&])")


def markdown_text(value: object) -> str:
    """A value as literal text inside a line of Markdown: every character that opens inline syntax there (emphasis,
    code, links, raw HTML, entities, table cells) is backslash-escaped, and line breaks become spaces, so a name or
    a record type cannot open a link, a code span or a new cell. (It goes inside a line: a ``#`` or a ``-`` that
    starts one is still read as a heading or a list item.)"""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", " ".join(str(value).splitlines()))


_ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])")


def unescaped(markdown: str) -> str:
    """Markdown bub_nb wrote, as plain text reads it: the backslashes that kept a value literal (CommonMark's
    escapes of ASCII punctuation) taken away, so a terminal shows ``auto_handoff`` rather than ``auto\\_handoff``."""
    return _ESCAPED.sub(r"\1", markdown)


def code_span(value: object) -> str:
    """A value as one Markdown code span, fenced by more backticks than it holds in a row (CommonMark's rule),
    so a backtick inside cannot close it; line breaks become spaces and ``|`` is escaped for table cells."""
    text = " ".join(str(value).splitlines()).replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    padded = f" {text} " if text.startswith("`") or text.endswith("`") or not text.strip() else text
    return f"{fence}{padded}{fence}"


def code_block(value: object, language: str = "") -> str:
    """A value as one fenced Markdown code block, its fence longer than any run of backticks it holds."""
    text = str(value)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text}\n{fence}"


# -- terminals ---------------------------------------------------------------------------------------------------

_CONTROLS: Final = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    if code < 0x20:
        return chr(0x2400 + code)  # ␀ … ␟ (␛ for ESC)
    if code == 0x7F:
        return "\u2421"  # ␡
    return f"\\x{code:02x}"  # C1 controls have no pictures: their escape, as text


def visible_controls(text: str) -> str:
    """``text`` safe to print on a terminal: every C0 and C1 control character but ``\\n`` and ``\\t`` shown as a
    marker (``\\x1b`` as ``␛``, ``\\r`` as ``␍``, ``\\x9b`` as ``\\x9b``), so no escape sequence moves the cursor,
    erases a line, retitles the window or writes the clipboard; a lone surrogate, which no terminal can be sent,
    as its marker too (:func:`visible_surrogates`)."""
    return _CONTROLS.sub(_visible, visible_surrogates(text))


_HIDDEN: Final = re.compile(
    "[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c"  # bidi embeddings, overrides, isolates and marks
    "\u200b-\u200d\u2060-\u2064\u180e\ufeff\u00ad\u034f\u115f\u1160\u3164\uffa0"  # zero-width, invisible
    "\U000e0000-\U000e007f]"  # tag characters
)


def reveal_hidden(text: str) -> tuple[str, int]:
    """``text`` with every bidi control and invisible character shown as a marker (``⟦U+202E⟧``), and how many
    there were: code read in an approval is then the code that runs, not what a reordering makes it look like."""
    count = 0

    def marker(match: re.Match[str]) -> str:
        nonlocal count
        count += 1
        return f"⟦U+{ord(match.group(0)):04X}⟧"

    return _HIDDEN.sub(marker, text), count


class VisibleControlsWriter:
    """A text stream whose writes go through :func:`visible_controls`; everything else is the stream's own (its
    ``buffer`` too, so a protocol on stdout, like MCP's, still writes its bytes as they are)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(visible_controls(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextmanager
def visible_terminal() -> Iterator[None]:
    """While it lasts, what is printed to stdout and stderr shows its control characters as markers."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = VisibleControlsWriter(out), VisibleControlsWriter(err)  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err


# -- what a display publishes --------------------------------------------------------------------------------------


class Shown:
    """A display: cleaned ``text/html`` for notebooks and its plain text (controls visible) for terminals.

    Build it with :meth:`markdown` from Markdown that may hold outside text, or from HTML bub_nb wrote around
    escaped values. It has no ``_repr_markdown_``: JupyterLab would render that Markdown as trusted.
    """

    __slots__ = ("html", "plain")

    def __init__(self, html_text: str, plain: str) -> None:
        self.html = clean_html(html_text)
        self.plain = visible_controls(plain)

    @classmethod
    def markdown(cls, markdown: str, plain: str | None = None) -> Shown:
        return cls(markdown_html(markdown), markdown if plain is None else plain)

    def _repr_html_(self) -> str:
        return self.html

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/html": self.html, "text/plain": self.plain}

    def __repr__(self) -> str:
        return self.plain

    def __str__(self) -> str:
        return self.plain

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(self.plain)
