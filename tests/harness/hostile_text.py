"""Text a model, a tape, a log or a server could hand bub_nb to show: each payload tries to run script, load
something, restyle the page, break out of Markdown or fool a reader or a terminal.

A payload that runs sets ``window.__pwned`` and asks ``beacon`` (a listener on 127.0.0.1 the test starts) for a
page; a test asserts the global stays undefined and the listener hears nothing. ``BEACON`` in a payload is
replaced by that address.
"""

from __future__ import annotations

import http.server
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from html import unescape as html_unescape
from typing import Final

import bub_nb.markup as _markup

_RUN: Final = "window.__pwned=1;fetch('BEACON/ran')"

PAYLOADS: Final[tuple[str, ...]] = (
    f"<script>{_RUN}</script>",
    f'<img src=x onerror="{_RUN}">',
    "<img src='BEACON/img'>",
    "![beacon](BEACON/markdown-image)",
    f'<svg onload="{_RUN}"><circle r=5 /></svg>',
    f'<iframe srcdoc="<script>parent.{_RUN}</script>"></iframe>',
    f"[click me](javascript:{_RUN})",
    f'<a href="javascript:{_RUN}">link</a>',
    f'<details open ontoggle="{_RUN}"><summary>x</summary></details>',
    f'<math><mtext><table><mglyph><style><img src=x onerror="{_RUN}"></style></mglyph></table></mtext></math>',
    "<style>body{display:none} .jp-OutputArea{background:url(BEACON/css)}</style>",
    '<span style="background:url(BEACON/style-attr);position:fixed;inset:0">cover</span>',
    f"<form action='BEACON/form'><input autofocus onfocus=\"{_RUN}\"></form>",
    f'<object data="javascript:{_RUN}"></object><embed src="BEACON/embed">',
    f'```\n</code></pre><img src=x onerror="{_RUN}">\n```',
    f'`` ` `` <img src=x onerror="{_RUN}"> `',
    f"] ) [x](javascript:{_RUN}) <div>raw html block\n\n<script>{_RUN}</script></div>",
    f'| a | b |\n|---|---|\n| <img src=x onerror="{_RUN}"> | ` |',
    f"' onmouseover=\"{_RUN}\" class='x",
    f'"><script>{_RUN}</script><b class="',
    "e\u202e\u2066 evil \u2069\u202c rtl \u200b\ufeff\u2060 zero-width \U000e0041 tag",
    "\x1b]52;c;cHduZWQ=\x07 \x1b[2K\x1b[1A\r erased \x9b31m c1 \x00 nul \x7f",
    "../../../../etc/passwd",
)
"""Each a value a hostile source might put in a reply, an anchor name, a summary, a record type or a tool result."""

HUGE: Final = "A" * 300_000 + "<script>" + _RUN + "</script>"
"""A value larger than any display shows."""


def payloads(beacon: str) -> list[str]:
    """The corpus with ``BEACON`` pointing at ``beacon`` (``http://127.0.0.1:PORT``)."""
    return [payload.replace("BEACON", beacon) for payload in PAYLOADS]


def one_text(beacon: str) -> str:
    """Every payload in one text, one paragraph each."""
    return "\n\n".join(payloads(beacon))


CONTROL_CHARACTERS: Final = frozenset(chr(code) for code in (*range(0x20), *range(0x7F, 0xA0))) - {"\n", "\t"}
"""What a terminal must never receive from content: C0 and C1 controls but newline and tab."""

FORBIDDEN_TAGS: Final = ("script", "iframe", "object", "embed", "form", "input", "svg", "math", "img", "style")
"""Elements no output bub_nb writes may hold (bub_nb's widgets bring their own ``style``: checked apart)."""


def bub_nb_styles() -> tuple[str, ...]:
    """The style blocks bub_nb's widgets write themselves (the only ``style`` elements an output may hold)."""
    from bub_nb.notebook.widgets import _style, context_diff, lanes

    return (_style.style_block(), context_diff._DIFF_CSS, lanes._STYLE)


_TAG: Final = re.compile(r"<\s*([a-zA-Z][a-zA-Z0-9-]*)((?:[^>\"']|\"[^\"]*\"|'[^']*')*)>")
_STYLE_VALUE: Final = re.compile(r"[a-z-]+\s*:\s*[^;:()\\]*;?")
_OWN_HANDLERS: Final = _markup._OWN_HANDLERS  # the constant click handlers bub_nb writes (a sortable header)
_PANDAS_STYLE: Final = re.compile(r"<style scoped>\s*\.dataframe[^<]*</style>")
_SAFE_ADDRESS: Final = re.compile(r"(https?:|mailto:|#|/|\.{0,2}/|[A-Za-z0-9._~%-]+(/|\?|#|$))")


def markup_problems(html: str) -> list[str]:
    """What in an output's HTML bub_nb did not write: a forbidden element, an event attribute, a style that loads
    or covers (``url(...)``, ``position``), a link that is not http(s), mailto or relative."""
    for own in bub_nb_styles():
        html = html.replace(own, "")
    html = _PANDAS_STYLE.sub("", html)  # a frame's own table style, which pandas writes
    found = []
    for tag, attributes in _TAG.findall(html):
        if tag.lower() in FORBIDDEN_TAGS:
            found.append(f"element <{tag}{attributes[:80]}>")
        for name, value in re.findall(
            r"([A-Za-z_:][-A-Za-z0-9_:.]*)\s*=\s*(\"[^\"]*\"|'[^']*'|[^\s\"'>]+)", attributes
        ):
            value = value.strip("\"'")
            if name.lower().startswith("on") and html_unescape(value) not in _OWN_HANDLERS:
                found.append(f"event attribute {name}= in <{tag}>")
            elif name.lower() == "style" and (
                "url" in value.lower()
                or "position" in value.lower()
                or not all(_STYLE_VALUE.fullmatch(part.strip() + ";") for part in value.split(";") if part.strip())
            ):
                found.append(f"style {value!r} in <{tag}>")
            elif name.lower() in ("href", "src", "action", "data", "formaction", "srcdoc") and not _SAFE_ADDRESS.match(
                value
            ):
                found.append(f"{name}={value!r} in <{tag}>")
    return found


@dataclass
class Beacon:
    """A listener on 127.0.0.1 that records every request it hears."""

    address: str
    heard: list[str] = field(default_factory=list)


@contextmanager
def beacon() -> Iterator[Beacon]:
    """Listen on a free loopback port for as long as the block runs."""
    found = Beacon("")

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            found.heard.append(self.path)
            self.send_response(204)
            self.end_headers()

        do_POST = do_GET

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    found.address = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield found
    finally:
        server.shutdown()
        server.server_close()
