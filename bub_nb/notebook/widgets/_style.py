"""The look the widgets share: one palette per entry kind, CSS that follows the JupyterLab theme, glyphs for text."""

from __future__ import annotations

import html
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from bub_nb.markup import clean_html


@dataclass(frozen=True, slots=True)
class Concept:
    """One thing a widget colours, the colour it has in every widget, and what that colour means."""

    color: str
    label: str
    meaning: str


# One colour per concept, in every widget: the Okabe-Ito hues (made to stay apart for colour-blind readers), two
# greys of different lightness, a dark brown and Paul Tol's indigo. docs/widgets.md lists them; a test keeps them
# apart under a deuteranopia simulation. Where colour tells states apart, a second channel (a sign, a shape or a
# word) does too.
PALETTE: Final[dict[str, Concept]] = {
    "user": Concept("#56b4e9", "user message", "what a person typed: a user message, the prompt of the next turn"),
    "assistant": Concept("#0072b2", "assistant message", "what the model wrote: its answers, completion tokens"),
    "tool_call": Concept("#e69f00", "tool call", "a call the model asked for"),
    "tool_result": Concept("#f0e442", "tool result", "what a tool gave back"),
    "system": Concept("#686868", "system prompt", "the system prompt sent with a request"),
    "event": Concept("#dddddd", "event", "bookkeeping the model never sees: events, reply priming"),
    "anchor": Concept("#009e73", "phase anchor", "where a phase starts; a handoff"),
    "memory": Concept("#cc79a7", "memory", "the memory zone: its anchors and the memory block of the prompt"),
    "tools": Concept("#661100", "tool schemas", "the tools offered to the model, sent with every request"),
    "sent": Concept("#332288", "sent", "taken from the tape and sent: the view in a request, a turn's prompt tokens"),
    "error": Concept("#d55e00", "error, refused, over", "an error, a refused request, anything over the window"),
}


def colors(concepts: Mapping[str, str]) -> dict[str, str]:
    """The palette's colour of each concept, by the name a widget draws it under (``{name: concept}``)."""
    return {name: PALETTE[concept].color for name, concept in concepts.items()}


KIND_COLORS: Final[dict[str, str]] = colors(
    {
        "message": "assistant",
        "tool_call": "tool_call",
        "tool_result": "tool_result",
        "system": "system",
        "event": "event",
        "error": "error",
        "anchor": "anchor",
    }
)
USER_COLOR: Final = PALETTE["user"].color
MEMORY_COLOR: Final = PALETTE["memory"].color
PROMPT_COLOR: Final = PALETTE["sent"].color
COMPLETION_COLOR: Final = PALETTE["assistant"].color
ERROR_COLOR: Final = PALETTE["error"].color

# One character per kind for terminals; phase anchors are '|' and memory anchors ':'.
KIND_GLYPHS: Final[dict[str, str]] = {
    "message": "m",
    "tool_call": "c",
    "tool_result": "r",
    "system": "s",
    "event": "e",
    "error": "x",
    "anchor": "|",
}
MEMORY_GLYPH: Final = ":"
OTHER_GLYPH: Final = "?"

LEGEND: Final[tuple[tuple[str, str], ...]] = (
    ("message", "message"),
    ("tool_call", "tool call"),
    ("tool_result", "tool result"),
    ("system", "system"),
    ("event", "event"),
    ("error", "error"),
    ("anchor", "phase anchor"),
)


def ink(color: str) -> str:
    """Black or white, whichever contrasts more with ``color`` (a ``#rrggbb``), for text drawn on it (WCAG 2)."""

    def channel(value: int) -> float:
        c = value / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(int(color[i : i + 2], 16)) for i in (1, 3, 5))
    luminance = 0.2126 * r + 0.7152 * g + 0.0722 * b
    return "#000" if (luminance + 0.05) / 0.05 >= 1.05 / (luminance + 0.05) else "#fff"


_KIND_RULES = "\n".join(
    f".bub-w .bub-kind-{kind}{{--bub-c:{color};--bub-on:{ink(color)}}}" for kind, color in KIND_COLORS.items()
)

#: Text sizes come from JupyterLab's own variables (Presentation Mode and the browser's zoom enlarge them), and
#: nothing is smaller than the code font (13 px at 100%). Text a student reads is never faded: state is told by
#: fill, outline and signs instead.
FONT: Final = "var(--jp-content-font-size1,14px)"
MONO_SIZE: Final = "var(--jp-code-font-size,13px)"

CSS: Final = f"""
.bub-w{{--bub-fg:var(--jp-content-font-color1,var(--vscode-editor-foreground,inherit));
 --bub-line:var(--jp-border-color2,rgba(128,128,128,.35));
 --bub-band:var(--jp-brand-color1,#1976d2);--bub-accent:var(--jp-brand-color1,#1976d2);
 --bub-mono:var(--jp-code-font-family,ui-monospace,SFMono-Regular,Menlo,Consolas,monospace);
 color:var(--bub-fg);font-size:{FONT};line-height:1.45;margin:2px 0;white-space:normal;min-width:0}}
.bub-w .bub-title{{font-weight:600;margin:2px 0;font-size:1.1em}}
.bub-w .bub-title code,.bub-w .bub-mono,.bub-w td,.bub-w th,.bub-w pre{{font-family:var(--bub-mono)}}
.bub-w .bub-muted{{font-style:italic}}
.bub-w .bub-section{{font-size:1em;font-weight:600;margin:.6em 0 .15em;border-bottom:1px solid var(--bub-line)}}
.bub-w .bub-strip{{display:flex;flex-wrap:wrap;align-items:center;gap:4px 0;padding:3px 2px}}
/* A cell is an entry, its number written in it: filled when its messages reach the model, hollow when not. */
.bub-w .bub-cell{{display:inline-block;min-width:2.3em;height:1.6em;margin:0 1px;padding:0 .2em;border-radius:3px;
 box-sizing:border-box;border:2px solid var(--bub-c,var(--bub-line));background:transparent;color:var(--bub-fg);
 font:{MONO_SIZE}/1.35em var(--bub-mono);text-align:center;white-space:nowrap;vertical-align:middle}}
.bub-w .bub-cell.bub-in-view{{background:var(--bub-c);color:var(--bub-on,#fff)}}
.bub-w .bub-cell.bub-in-window{{box-shadow:0 0 0 2px var(--bub-band)}}
.bub-w .bub-cell.bub-cited{{outline:2px solid var(--bub-fg);outline-offset:1px}}
.bub-w .bub-cell.bub-lost{{border-bottom-width:6px;border-bottom-color:{ERROR_COLOR}}}
.bub-w .bub-cell.bub-lost::after{{content:"!";font-weight:700}}
.bub-w .bub-summary{{white-space:normal;margin:4px 0}}.bub-w a.bub-cite{{text-decoration:underline dotted}}
.bub-w .bub-cell.bub-dropped{{background-image:repeating-linear-gradient(45deg,transparent 0 3px,
 var(--bub-line) 3px 5px)}}
.bub-w .bub-cell.bub-retracted{{border-style:dashed;text-decoration:line-through}}
{_KIND_RULES}
.bub-w .bub-kind-message.bub-role-user{{--bub-c:{USER_COLOR};--bub-on:{ink(USER_COLOR)}}}
.bub-w .bub-cell.bub-anchor{{max-width:18em;overflow:hidden;text-overflow:ellipsis;font-weight:600;margin:0 2px}}
.bub-w .bub-cell.bub-memory-anchor{{--bub-c:{MEMORY_COLOR};--bub-on:{ink(MEMORY_COLOR)};border-radius:.8em}}
.bub-w .bub-more{{font:{MONO_SIZE} var(--bub-mono);margin-right:6px}}
.bub-w .bub-legend{{display:flex;flex-wrap:wrap;gap:2px 14px;font:{MONO_SIZE} var(--bub-mono);margin:4px 0}}
.bub-w .bub-legend .bub-cell{{min-width:2.3em;margin-right:4px}}
.bub-w .bub-legend .bub-cell.bub-in-window{{box-shadow:0 0 0 2px var(--bub-band)}}
/* Tables rules are doubled up to outrank the notebook's own table styles (right-aligned, striped). */
.bub-w.bub-w table{{border-collapse:collapse;font-size:{MONO_SIZE};margin:2px 0;width:auto;color:inherit;
 table-layout:auto}}
.bub-w.bub-w tr,.bub-w.bub-w tbody tr{{background:transparent;text-align:left}}
.bub-w.bub-w th{{text-align:left;font-weight:600;border:none;border-bottom:2px solid var(--bub-line);
 padding:2px 8px;line-height:1.45;vertical-align:bottom}}
.bub-w.bub-w td{{text-align:left;padding:1px 8px;border:none;border-bottom:1px solid var(--bub-line);vertical-align:top;
 line-height:1.45}}
.bub-w.bub-w td.bub-num,.bub-w.bub-w th.bub-num{{text-align:right;font-variant-numeric:tabular-nums}}
.bub-w.bub-w table.bub-request td:first-child{{white-space:nowrap}}
.bub-w.bub-w th.bub-sortable{{cursor:pointer;white-space:nowrap}}
.bub-w.bub-w tr.bub-archived td{{font-style:italic}}
/* A fixed layout lets the content column take what is left of the width and end in an ellipsis. */
.bub-w.bub-w table.bub-messages-table{{width:100%;max-width:110em;table-layout:fixed}}
.bub-w.bub-w td.bub-content{{font-family:inherit;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}}
.bub-w.bub-w td.bub-content summary{{overflow:hidden;text-overflow:ellipsis}}
.bub-w.bub-w td.bub-content details[open]{{white-space:normal}}
.bub-w .bub-role{{display:inline-block;min-width:5.5em;padding:0 4px;border-radius:3px;font-size:1em;
 color:#fff;text-align:center}}
.bub-w .bub-role-user{{background:{USER_COLOR};color:{ink(USER_COLOR)}}}
.bub-w .bub-role-assistant{{background:{KIND_COLORS["message"]};color:{ink(KIND_COLORS["message"])}}}
.bub-w .bub-role-tool{{background:{KIND_COLORS["tool_result"]};color:{ink(KIND_COLORS["tool_result"])}}}
.bub-w .bub-role-system{{background:{KIND_COLORS["system"]};color:{ink(KIND_COLORS["system"])}}}
.bub-w details summary{{cursor:pointer;list-style-position:inside}}
.bub-w pre{{white-space:pre-wrap;margin:2px 0 4px;font-size:{MONO_SIZE};max-height:24em;overflow:auto}}
.bub-w .bub-bar{{display:inline-block;height:.8em;border-radius:1px;vertical-align:-1px}}
.bub-w .bub-bar.bub-over{{background-image:repeating-linear-gradient(45deg,transparent 0 3px,rgba(0,0,0,.35) 3px 5px)}}
.bub-w.bub-w .bub-total td{{font-weight:600;border-bottom:none}}
.bub-w .bub-note{{font-size:1em;margin:2px 0}}
.bub-w .bub-error{{color:{ERROR_COLOR};font-weight:600}}
.bub-w .bub-columns{{display:flex;align-items:flex-end;gap:2px;height:90px;padding:14px 2px 0;
 border-bottom:1px solid var(--bub-line)}}
.bub-w .bub-column{{position:relative;display:flex;flex-direction:column-reverse;flex:1 1 0;min-width:3px;
 max-width:26px;min-height:1px}}
.bub-w .bub-column span{{display:block;width:100%}}
/* Signs are drawn, not typed: a browser without an emoji font shows a drawn tick, never an empty box. */
.bub-w .bub-column .bub-tick{{position:absolute;top:-12px;left:50%;margin-left:-1px;width:2px;height:9px;
 background:{KIND_COLORS["anchor"]}}}
.bub-w .bub-tick-key{{display:inline-block;width:2px;height:.8em;background:{KIND_COLORS["anchor"]};
 vertical-align:-1px}}
.bub-w .bub-axis{{display:flex;justify-content:space-between;font:{MONO_SIZE} var(--bub-mono)}}
.bub-w .bub-stack{{display:inline-flex;height:.8em;vertical-align:-1px;min-width:1px}}
.bub-w .bub-stack span{{display:block;height:100%}}
.bub-w.bub-w .bub-current td{{font-weight:600}}
.bub-w .bub-gauge{{margin:4px 0;max-width:48em}}
.bub-w .bub-gauge-bar{{position:relative;display:flex;height:1em;border-radius:2px;background:var(--bub-line)}}
.bub-w .bub-gauge-fill{{display:block;height:100%}}
.bub-w .bub-gauge-limit,.bub-w .bub-limit{{position:absolute;top:-3px;bottom:-3px;width:2px;margin-left:-1px;
 background:var(--bub-fg)}}
.bub-w .bub-turns-window{{overflow-x:auto}}
.bub-w.bub-w td.bub-bars{{position:relative;white-space:nowrap}}
.bub-w.bub-w tr.bub-refused td{{color:{ERROR_COLOR}}}
.bub-w .bub-gauge-note{{font-size:1em;margin:0 0 2px}}
.bub-w .bub-gauge-text{{font:{MONO_SIZE} var(--bub-mono);margin-top:2px}}
/* The controls' text follows the content size too, so Presentation Mode enlarges a picker with its widget. */
.bub-mode-picker .widget-toggle-button,.bub-anchor-picker select,.bub-window-size input,.bub-window-size label,
.bub-student-picker select,.bub-student-picker label,.bub-open-turn,.bub-refresh,.bub-student-search input,
.bub-memory-view select,.bub-memory-view label{{font-size:{FONT}!important;height:auto;min-height:1.9em}}
.bub-context-view .widget-html-content,.bub-memory-view .widget-html-content,.bub-timeline .widget-html-content{{
 min-width:0;line-height:normal}}
"""


def style_block() -> str:
    return f"<style>{CSS}</style>"


def wrap(body: str, *classes: str, styled: bool = True, attrs: dict[str, object] | None = None) -> str:
    """One self-contained HTML chunk: the styles travel with it, so exported notebooks keep the look.

    ``body`` is bub_nb's HTML with every outside value escaped in it; it is cleaned against the allow-list of
    :func:`bub_nb.markup.clean_html` all the same, so what a widget shows holds no element or attribute that can
    run or load anything. The style block is bub_nb's own and goes in beside it.
    """
    names = " ".join(("bub-w", *classes))
    extra = "".join(f' {name}="{esc(value)}"' for name, value in (attrs or {}).items())
    return (style_block() if styled else "") + clean_html(f'<div class="{names}"{extra}>{body}</div>')


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def bar(width_px: float, color: str, title: str = "", *, over: bool = False) -> str:
    """A bar of ``color``; ``over`` hatches it too, so "over the window" is not told by colour alone."""
    width = max(1.0, round(width_px, 1)) if width_px > 0 else 0
    tip = f' title="{esc(title)}"' if title else ""
    css = "bub-bar bub-over" if over else "bub-bar"
    return f'<span class="{css}" style="width:{width}px;background-color:{color}"{tip}></span>'


def text_bar(value: float, scale: float, width: int, char: str = "█") -> str:
    """A bar of up to ``width`` characters; any value above zero shows at least one."""
    if value <= 0 or scale <= 0:
        return ""
    return char * max(1, round(width * value / scale))


def clip(text: str, width: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"
