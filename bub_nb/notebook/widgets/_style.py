"""The look the widgets share: one palette per entry kind, CSS that follows the JupyterLab theme, glyphs for text."""

from __future__ import annotations

import html
from typing import Final

# Tableau 10 hues: mid-tone, so the same colour reads on light and dark themes alike.
KIND_COLORS: Final[dict[str, str]] = {
    "message": "#4e79a7",
    "tool_call": "#f28e2b",
    "tool_result": "#edc948",
    "system": "#9d9da1",
    "event": "#bab0ac",
    "error": "#e15759",
    "anchor": "#59a14f",
}
USER_COLOR: Final = "#86b2e0"
MEMORY_COLOR: Final = "#b07aa1"
PROMPT_COLOR: Final = "#4e79a7"
COMPLETION_COLOR: Final = "#f28e2b"

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

_KIND_RULES = "\n".join(f".bub-w .bub-kind-{kind}{{background:{color}}}" for kind, color in KIND_COLORS.items())

CSS: Final = f"""
.bub-w{{--bub-fg:var(--jp-content-font-color1,var(--vscode-editor-foreground,inherit));
 --bub-line:var(--jp-border-color2,rgba(128,128,128,.35));
 --bub-band:rgba(66,133,244,.30);--bub-accent:var(--jp-brand-color1,#1976d2);
 --bub-mono:var(--jp-code-font-family,ui-monospace,SFMono-Regular,Menlo,Consolas,monospace);
 color:var(--bub-fg);font-size:12px;line-height:1.45;margin:2px 0;white-space:normal;min-width:0}}
.bub-w .bub-title{{font-weight:600;margin:2px 0}}
.bub-w .bub-title code,.bub-w .bub-mono,.bub-w td,.bub-w th,.bub-w pre{{font-family:var(--bub-mono)}}
.bub-w .bub-muted{{opacity:.68}}
.bub-w .bub-section{{font-size:11px;font-weight:600;text-transform:uppercase;letter-spacing:.04em;
 opacity:.75;margin:8px 0 2px}}
.bub-w .bub-strip{{display:flex;flex-wrap:wrap;align-items:center;gap:2px 0;padding:3px 2px}}
.bub-w .bub-cell{{display:inline-block;width:8px;height:16px;margin:0 1px;border-radius:2px;opacity:.32;
 box-sizing:border-box}}
.bub-w .bub-cell.bub-in-window{{opacity:.58;box-shadow:0 0 0 2px var(--bub-band)}}
.bub-w .bub-cell.bub-cited{{outline:2px solid var(--bub-fg);outline-offset:-1px;opacity:.9}}
.bub-w .bub-cell.bub-in-view{{opacity:1}}
.bub-w .bub-cell.bub-dropped{{background-image:repeating-linear-gradient(45deg,transparent 0 2px,
 rgba(0,0,0,.45) 2px 3px)}}
.bub-w .bub-cell.bub-retracted{{opacity:.2;outline:1px dashed var(--bub-fg);outline-offset:-1px}}
{_KIND_RULES}
.bub-w .bub-kind-message.bub-role-user{{background:{USER_COLOR}}}
.bub-w .bub-cell.bub-anchor{{width:auto;max-width:16em;padding:0 4px;color:#fff;font:600 10px/16px var(--bub-mono);
 overflow:hidden;text-overflow:ellipsis;white-space:nowrap;margin:0 2px}}
.bub-w .bub-cell.bub-memory-anchor{{background:{MEMORY_COLOR};width:8px;border-radius:50%;height:8px;
 margin:4px 1px}}
.bub-w .bub-more{{font:10px var(--bub-mono);opacity:.7;margin-right:6px}}
.bub-w .bub-legend{{display:flex;flex-wrap:wrap;gap:2px 10px;font:10px var(--bub-mono);opacity:.85;margin:2px 0}}
.bub-w .bub-legend .bub-cell{{opacity:1;height:10px;vertical-align:-1px;margin-right:3px;box-shadow:none}}
.bub-w .bub-legend .bub-cell.bub-memory-anchor{{height:8px;margin:0 3px 0 1px}}
.bub-w .bub-legend .bub-cell.bub-in-window{{background:transparent;box-shadow:0 0 0 2px var(--bub-band)}}
/* Tables rules are doubled up to outrank the notebook's own table styles (right-aligned, striped). */
.bub-w.bub-w table{{border-collapse:collapse;font-size:11.5px;margin:2px 0;width:auto;color:inherit;table-layout:auto}}
.bub-w.bub-w tr,.bub-w.bub-w tbody tr{{background:transparent;text-align:left}}
.bub-w.bub-w th{{text-align:left;font-weight:600;opacity:.75;border:none;border-bottom:1px solid var(--bub-line);
 padding:2px 8px;line-height:1.45;vertical-align:bottom}}
.bub-w.bub-w td{{text-align:left;padding:1px 8px;border:none;border-bottom:1px solid var(--bub-line);vertical-align:top;
 line-height:1.45}}
.bub-w.bub-w td.bub-num,.bub-w.bub-w th.bub-num{{text-align:right;font-variant-numeric:tabular-nums}}
/* A fixed layout lets the content column take what is left of the width and end in an ellipsis. */
.bub-w.bub-w table.bub-messages-table{{width:100%;max-width:110em;table-layout:fixed}}
.bub-w.bub-w td.bub-content{{font-family:inherit;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}}
.bub-w.bub-w td.bub-content summary{{overflow:hidden;text-overflow:ellipsis}}
.bub-w.bub-w td.bub-content details[open]{{white-space:normal}}
.bub-w .bub-role{{display:inline-block;min-width:5.5em;padding:0 4px;border-radius:3px;font-size:10.5px;
 color:#fff;text-align:center}}
.bub-w .bub-role-user{{background:{USER_COLOR}}} .bub-w .bub-role-assistant{{background:{KIND_COLORS["message"]}}}
.bub-w .bub-role-tool{{background:{KIND_COLORS["tool_result"]};color:#333}}
.bub-w .bub-role-system{{background:{KIND_COLORS["system"]}}}
.bub-w details summary{{cursor:pointer;list-style-position:inside}}
.bub-w pre{{white-space:pre-wrap;margin:2px 0 4px;font-size:11px;max-height:24em;overflow:auto}}
.bub-w .bub-bar{{display:inline-block;height:9px;border-radius:1px;vertical-align:-1px}}
.bub-w.bub-w .bub-total td{{font-weight:600;border-bottom:none}}
.bub-w .bub-note{{font-size:11px;opacity:.8;margin:2px 0}}
.bub-w .bub-error{{color:{KIND_COLORS["error"]};font-weight:600}}
.bub-w .bub-columns{{display:flex;align-items:flex-end;gap:2px;height:90px;padding:14px 2px 0;
 border-bottom:1px solid var(--bub-line)}}
.bub-w .bub-column{{position:relative;display:flex;flex-direction:column-reverse;flex:1 1 0;min-width:3px;
 max-width:26px;min-height:1px}}
.bub-w .bub-column span{{display:block;width:100%}}
/* Signs are drawn, not typed: a browser without an emoji font shows a drawn tick, never an empty box. */
.bub-w .bub-column .bub-tick{{position:absolute;top:-12px;left:50%;margin-left:-1px;width:2px;height:9px;
 background:{KIND_COLORS["anchor"]}}}
.bub-w .bub-tick-key{{display:inline-block;width:2px;height:9px;background:{KIND_COLORS["anchor"]};vertical-align:-1px}}
.bub-w .bub-axis{{display:flex;justify-content:space-between;font:10px var(--bub-mono);opacity:.7}}
.bub-w .bub-stack{{display:inline-flex;height:10px;vertical-align:-1px;min-width:1px}}
.bub-w .bub-stack span{{display:block;height:100%}}
.bub-w.bub-w .bub-current td{{font-weight:600}}
.bub-w .bub-gauge{{margin:4px 0;max-width:48em}}
.bub-w .bub-gauge-bar{{position:relative;display:flex;height:12px;border-radius:2px;background:var(--bub-line)}}
.bub-w .bub-gauge-fill{{display:block;height:100%}}
.bub-w .bub-gauge-limit,.bub-w .bub-limit{{position:absolute;top:-3px;bottom:-3px;width:2px;margin-left:-1px;
 background:var(--bub-fg)}}
.bub-w .bub-turns-window{{overflow-x:auto}}
.bub-w.bub-w td.bub-bars{{position:relative;white-space:nowrap}}
.bub-w.bub-w tr.bub-refused td{{color:{KIND_COLORS["error"]}}}
.bub-w .bub-gauge-note{{font-size:11px;margin:0 0 2px}}
.bub-w .bub-gauge-text{{font:11px var(--bub-mono);margin-top:2px}}
.bub-context-view .widget-toggle-buttons .widget-toggle-button{{font-size:11px}}
.bub-context-view .widget-html-content,.bub-memory-view .widget-html-content,.bub-timeline .widget-html-content{{
 min-width:0;line-height:normal}}
"""


def style_block() -> str:
    return f"<style>{CSS}</style>"


def wrap(body: str, *classes: str, styled: bool = True, attrs: dict[str, object] | None = None) -> str:
    """One self-contained HTML chunk: the styles travel with it, so exported notebooks keep the look."""
    names = " ".join(("bub-w", *classes))
    extra = "".join(f' {name}="{esc(value)}"' for name, value in (attrs or {}).items())
    return f'{style_block() if styled else ""}<div class="{names}"{extra}>{body}</div>'


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def bar(width_px: float, color: str, title: str = "") -> str:
    width = max(1.0, round(width_px, 1)) if width_px > 0 else 0
    tip = f' title="{esc(title)}"' if title else ""
    return f'<span class="bub-bar" style="width:{width}px;background:{color}"{tip}></span>'


def text_bar(value: float, scale: float, width: int, char: str = "█") -> str:
    """A bar of up to ``width`` characters; any value above zero shows at least one."""
    if value <= 0 or scale <= 0:
        return ""
    return char * max(1, round(width * value / scale))


def clip(text: str, width: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"
