"""The bars of the tape timeline: entries by kind, entries over time, and the tokens of each turn."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
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
    text_bar,
)

TURN_BAR_PX: Final = 200
REFUSED_COLOR: Final = KIND_COLORS["error"]
COLUMN_PX: Final = 74
TEXT_BAR: Final = 32
KINDS: Final = (*LEGEND, (MEMORY_ANCHOR, "memory anchor"))
COLORS: Final = {**KIND_COLORS, MEMORY_ANCHOR: MEMORY_COLOR}
GLYPHS: Final = {**KIND_GLYPHS, MEMORY_ANCHOR: MEMORY_GLYPH}


def kinds_note(kinds: Counter[str]) -> str:
    """``3 messages, 1 anchor``: the counts of the kinds present."""
    return ", ".join(f"{kinds[kind]} {label}" for kind, label in KINDS if kinds[kind])


#: Fewer activity columns than this draw no picture; the timeline says it in words.
MIN_COLUMNS: Final = 3


def turns_legend_html(limit: int | None) -> str:
    return (
        f'<div class="bub-legend"><span>{bar(14, PROMPT_COLOR)} prompt (sent)</span>'
        f"<span>{bar(14, COMPLETION_COLOR)} completion</span>"
        f"<span>{bar(14, REFUSED_COLOR, over=True)} refused or over the window (said in words too)</span>"
        f"{'' if limit is None else f'<span>| window {limit}</span>'}</div>"
    )


def activity_words(buckets: Sequence[Bucket], step: str) -> str:
    """Activity too short for columns, in words: ``All 39 entries within 1 minute (UTC ...): 12 messages, ...``."""
    total: Counter[str] = Counter()
    for bucket in buckets:
        total.update(bucket.kinds)
    entries = sum(b.entries for b in buckets)
    when = " and ".join(f"{b.start:%Y-%m-%d %H:%M}" for b in buckets)
    counted = f"{entries} {'entry' if entries == 1 else 'entries'} within {len(buckets)} {step}"
    return (
        f'<div class="bub-note bub-activity-words">All {counted}{"s" if len(buckets) != 1 else ""} '
        f"(UTC {esc(when)}): {esc(_counted_kinds(total))}</div>"
    )


def _counted_kinds(kinds: Counter[str]) -> str:
    """``6 messages, 3 system prompts, 1 phase anchor``: :func:`kinds_note` in words that read as a sentence."""
    said = {"system": "system prompt"}
    return ", ".join(
        f"{kinds[kind]} {said.get(kind, label)}{'s' if kinds[kind] != 1 else ''}"
        for kind, label in KINDS
        if kinds[kind]
    )


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
        tick = '<span class="bub-tick"></span>'
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


def turn_html(turn: RunSummary, peak: int, limit: int | None = None) -> str:
    """One turn's row: its tokens as bars against the window's limit line; a refused request is one red bar."""
    prompt, completion = turn.prompt_tokens or 0, turn.completion_tokens or 0
    if turn.refused:
        width = TURN_BAR_PX * (prompt or limit or 0) / peak if peak else 0
        bars = bar(width, REFUSED_COLOR, _refused_note(turn), over=True)
        status = f' <span class="bub-error">{esc(_refused_note(turn))}</span>'
    else:
        # A bar past the limit line is red whatever made it so; the words say why it was not refused.
        over = limit is not None and prompt > limit
        bars = bar(
            TURN_BAR_PX * prompt / peak if peak else 0,
            REFUSED_COLOR if over else PROMPT_COLOR,
            f"{prompt} prompt tokens",
            over=over,
        ) + bar(TURN_BAR_PX * completion / peak if peak else 0, COMPLETION_COLOR, f"{completion} completion tokens")
        status = "" if turn.status == "ok" else f' <span class="bub-error">{esc(turn.status)}</span>'
        if over:
            calls = f"{turn.calls} calls added up" if turn.calls > 1 else "one call"
            status += f' <span class="bub-error bub-over-note">over the window: {calls}</span>'
        elif turn.calls > 1:
            status += f' <span class="bub-muted">· {turn.calls} calls added up</span>'
    line = ""
    if limit is not None and peak:
        left = 8 + TURN_BAR_PX * limit / peak  # the cell's padding, then the bar's scale
        line = f'<span class="bub-limit" style="left:{left:.1f}px" title="window {limit}"></span>'
    elapsed = "" if turn.elapsed_ms is None else f"{turn.elapsed_ms:.0f}"
    css = "bub-turn bub-refused" if turn.refused else "bub-turn"
    return (
        f'<tr class="{css}" data-entry-id="{turn.entry_id}" data-prompt-tokens="{tokens_text(turn.prompt_tokens)}"'
        f' data-completion-tokens="{tokens_text(turn.completion_tokens)}">'
        f'<td class="bub-num">{turn.number or ""}</td>'
        f'<td class="bub-num">#{turn.entry_id}</td>'
        f'<td class="bub-phase-name">{esc(turn.phase or "")}</td>'
        f"<td>{esc(turn.model or ('' if turn.refused else '?'))}{status}</td>"
        f'<td class="bub-num">{tokens_text(turn.prompt_tokens)}</td>'
        f'<td class="bub-num">{tokens_text(turn.completion_tokens)}</td>'
        f'<td class="bub-bars">{bars}{line}</td><td class="bub-num">{elapsed}</td></tr>'
    )


def _refused_note(turn: RunSummary) -> str:
    tokens = "?" if turn.prompt_tokens is None else str(turn.prompt_tokens)
    window = f" > {turn.window}" if turn.window is not None else ""
    return f"refused: {tokens}{window} tokens"


def turn_bar_text(turn: RunSummary, peak: int, limit: int | None = None) -> str:
    """A turn's bar for terminals (``█`` prompt, ``▒`` completion, ``X`` refused or over the window), with ``|`` at
    the window's limit."""
    if turn.refused or (limit is not None and (turn.prompt_tokens or 0) > limit):
        chars = list(text_bar(turn.prompt_tokens or limit or 0, peak, TEXT_BAR, "X"))
    else:
        prompt = text_bar(turn.prompt_tokens or 0, peak, TEXT_BAR, "█")
        chars = list(prompt + text_bar(turn.completion_tokens or 0, peak, TEXT_BAR, "▒"))
    if limit is not None and peak:
        at = min(TEXT_BAR, round(TEXT_BAR * limit / peak))
        chars += " " * (at + 1 - len(chars))
        chars[at] = "|"
    return "".join(chars)


def turns_peak(turns: Iterable[RunSummary], limit: int | None) -> int:
    """The scale of the turn bars: the largest turn or refused request, and the window."""
    sizes = [(t.prompt_tokens or 0) + (t.completion_tokens or 0) for t in turns]
    return max([*sizes, limit or 0], default=0)


def window_limit(refusals: Iterable[RunSummary], model_window: int | None) -> int | None:
    """The window drawn on the bars: the model's, else the one the newest refusal named."""
    if model_window is not None:
        return model_window
    return next((r.window for r in reversed(list(refusals)) if r.window is not None), None)


def turn_text(turn: RunSummary, peak: int, limit: int | None) -> str:
    """One turn's line for terminals: number, entry, tokens, time, model and its bar against the limit."""
    elapsed = "–" if turn.elapsed_ms is None else f"{turn.elapsed_ms:.0f}"
    status = ("" if turn.status == "ok" else f"  [{turn.status}]") + (
        f"  [{turn.calls} calls]" if turn.calls > 1 else ""
    )
    return (
        f"  {turn.number or '':>5} {'#' + str(turn.entry_id):>7}  {tokens_text(turn.prompt_tokens):>7} "
        f"{tokens_text(turn.completion_tokens):>7}  {elapsed:>7}  "
        f"{clip(turn.model or '', 16):<16} {turn_bar_text(turn, peak, limit)}{status}"
    )
