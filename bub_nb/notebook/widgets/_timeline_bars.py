"""The bars of the tape timeline: entries by kind, entries over time, and the tokens of each turn."""

from __future__ import annotations

from collections import Counter
from typing import Final

from bub_nb.notebook.widgets._activity import MEMORY_ANCHOR, Bucket, RunSummary
from bub_nb.notebook.widgets._style import (
    COMPLETION_COLOR,
    KIND_COLORS,
    KIND_GLYPHS,
    LEGEND,
    MEMORY_COLOR,
    MEMORY_GLYPH,
    PROMPT_COLOR,
    bar,
    clip,
    esc,
)

TURN_BAR_PX: Final = 200
COLUMN_PX: Final = 74
TEXT_BAR: Final = 32
KINDS: Final = (*LEGEND, (MEMORY_ANCHOR, "memory anchor"))
COLORS: Final = {**KIND_COLORS, MEMORY_ANCHOR: MEMORY_COLOR}
GLYPHS: Final = {**KIND_GLYPHS, MEMORY_ANCHOR: MEMORY_GLYPH}


def kinds_note(kinds: Counter[str]) -> str:
    """``3 messages, 1 anchor``: the counts of the kinds present."""
    return ", ".join(f"{kinds[kind]} {label}" for kind, label in KINDS if kinds[kind])


def tokens_text(value: int | None) -> str:
    return "–" if value is None else str(value)


def kind_bar_text(kinds: Counter[str], peak: int) -> str:
    """A bar of kind glyphs whose length follows the count, each kind in proportion."""
    total = sum(kinds[kind] for kind, _label in KINDS)
    length = max(1, round(TEXT_BAR * sum(kinds.values()) / peak)) if peak and total else 0
    out, seen = "", 0
    for kind, _label in KINDS:
        seen += kinds[kind]
        # Cumulative rounding: the parts always add up to exactly ``length``.
        out += GLYPHS[kind] * (round(length * seen / total) - len(out)) if total else ""
    return out


def kind_bar_html(kinds: Counter[str], width_px: float) -> str:
    spans = "".join(
        f'<span style="flex:{kinds[kind]};background:{COLORS[kind]}" title="{kinds[kind]} {esc(label)}"></span>'
        for kind, label in KINDS
        if kinds[kind]
    )
    return f'<span class="bub-stack" style="width:{max(1.0, round(width_px, 1))}px">{spans}</span>'


def column_html(bucket: Bucket, peak: int) -> str:
    title = f"{bucket.start:%Y-%m-%d %H:%M} · {bucket.entries} entries"
    if bucket.entries:
        title += f" ({kinds_note(bucket.kinds)})"
    tick = ""
    if bucket.anchors:
        names = ", ".join(f"#{i} {name}" for i, name in bucket.anchors)
        title += f"\nanchors: {names}"
        tick = '<span class="bub-tick">⚓</span>'
    height = COLUMN_PX * bucket.entries / peak if peak else 0
    spans = "".join(
        f'<span style="height:{height * bucket.kinds[kind] / bucket.entries:.1f}px;background:{COLORS[kind]}"></span>'
        for kind, _label in KINDS
        if bucket.kinds[kind]
    )
    return (
        f'<div class="bub-column" data-start="{bucket.start.isoformat()}" data-entries="{bucket.entries}"'
        f' title="{esc(title)}">{spans}{tick}</div>'
    )


def turn_html(turn: RunSummary, peak: int) -> str:
    prompt, completion = turn.prompt_tokens or 0, turn.completion_tokens or 0
    bars = bar(TURN_BAR_PX * prompt / peak if peak else 0, PROMPT_COLOR, f"{prompt} prompt tokens") + bar(
        TURN_BAR_PX * completion / peak if peak else 0, COMPLETION_COLOR, f"{completion} completion tokens"
    )
    status = "" if turn.status == "ok" else f' <span class="bub-error">{esc(turn.status)}</span>'
    elapsed = "" if turn.elapsed_ms is None else f"{turn.elapsed_ms:.0f}"
    return (
        f'<tr class="bub-turn" data-entry-id="{turn.entry_id}" data-prompt-tokens="{tokens_text(turn.prompt_tokens)}"'
        f' data-completion-tokens="{tokens_text(turn.completion_tokens)}"><td class="bub-num">{turn.number}</td>'
        f'<td class="bub-num">#{turn.entry_id}</td><td>{esc(clip(turn.phase or "", 28))}</td>'
        f"<td>{esc(turn.model or '?')}{status}</td>"
        f'<td class="bub-num">{tokens_text(turn.prompt_tokens)}</td>'
        f'<td class="bub-num">{tokens_text(turn.completion_tokens)}</td>'
        f'<td>{bars}</td><td class="bub-num">{elapsed}</td></tr>'
    )
