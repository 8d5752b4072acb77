"""The window gauge: tokens used against the model's context window, and the next request drawn in its parts.

Hooks: ``div.bub-gauge`` (``data-used``, ``data-limit``: empty when the window is unknown, ``data-over``) holds
``.bub-gauge-bar`` (one ``.bub-gauge-fill`` per part, ``data-part``) and ``.bub-gauge-text`` (``312 / 800 tokens``);
``table.bub-request`` has one ``tr.bub-request-part`` per part (``data-part``, ``data-tokens``) and the total cell
``data-total-tokens``; ``tr.bub-repeated`` (``data-repeated-tokens``, ``data-repeated-messages``) what the request
repeats of the last turn's request, when there is one; ``tr.bub-cost`` (``data-cost``) the request's input cost
when its model has a price.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from bub_nb.context.request import NextRequest, gauge_text, recalled_detail, repeated_detail, request_lines
from bub_nb.notebook.widgets._style import ERROR_COLOR, PROMPT_COLOR, bar, colors, esc
from bub_nb.tape.reports.prices import format_cost

PART_COLORS: Final = colors(
    {
        "system prompt": "system",
        "memory block": "memory",
        "view": "sent",
        "prompt": "user",
        "reply priming": "event",
        "tool schemas": "tools",
    }
)


def gauge_html(used: int, limit: int | None, parts: Sequence[tuple[str, int]] = (), what: str = "") -> str:
    """A bar filled to ``used`` of ``limit`` (in ``parts`` when given), red once over, with its numbers as text."""
    over = limit is not None and used > limit
    scale = max(used, limit or used, 1)
    pieces = parts or (("used", used),)
    fills = "".join(
        f'<span class="bub-gauge-fill" data-part="{esc(name)}" title="{esc(name)}: {tokens} tokens" '
        f'style="width:{100 * tokens / scale:.2f}%;background:{_color(name, over)}"></span>'
        for name, tokens in pieces
        if tokens > 0
    )
    line = "" if limit is None else f'<span class="bub-gauge-limit" style="left:{100 * limit / scale:.2f}%"></span>'
    label = f"{what} " if what else ""
    text = gauge_text(used, limit).split("] ", 1)[-1]
    return (
        f'<div class="bub-gauge" data-used="{used}" data-limit="{"" if limit is None else limit}" '
        f'data-over="{str(over).lower()}"><div class="bub-gauge-bar">{fills}{line}</div>'
        f'<div class="bub-gauge-text{" bub-error" if over else ""}">{esc(label + text)}</div></div>'
    )


def _color(part: str, over: bool = False) -> str:
    return ERROR_COLOR if over else PART_COLORS.get(part, PROMPT_COLOR)


def _part_row(name: str, tokens: int, detail: str) -> str:
    return (
        f'<tr class="bub-request-part" data-part="{esc(name)}" data-tokens="{tokens}">'
        f"<td>{bar(14, _color(name))} {esc(name)}</td>"
        f'<td class="bub-num">{tokens}</td><td>{esc(detail)}</td></tr>'
    )


def request_html(request: NextRequest) -> str:
    """The next request: its gauge, one row per part with its tokens and what it holds, the total and the room.

    The gauge and the first total are the same number: what the model counts against its window. A part the model
    does not count (the offline model's tool schemas) comes after that total, and the whole request after it."""
    counted = {name for name, _ in window_parts(request)}
    rows = "".join(_part_row(p.name, p.tokens, p.detail) for p in request.parts if p.name in counted)
    outside = [p for p in request.parts if p.name not in counted]
    who = request.model or "this model"
    first_total = (
        "the whole request (the parts add up to it)"
        if not outside
        else f"what {who} counts against its window: the gauge"
    )
    whole = "" if outside else f' data-total-tokens="{request.total_tokens}"'
    rows += (
        f'<tr class="bub-total"><td>{"total" if not outside else "counted"}</td>'
        f'<td class="bub-num" data-window-tokens="{request.window_tokens}"{whole}>{request.window_tokens}</td>'
        f"<td>{esc(first_total)}</td></tr>"
    )
    room = request.room
    if room is not None:
        rows += (
            f'<tr class="bub-room"><td>room left</td><td class="bub-num">{room}</td><td>for the answer</td></tr>'
            if room >= 0
            else f'<tr class="bub-room"><td class="bub-error">over by</td><td class="bub-num bub-error">{-room}</td>'
            '<td class="bub-error">the next turn overflows: a handoff is written first</td></tr>'
        )
    if outside:
        rows += "".join(
            _part_row(p.name, p.tokens, f"{p.detail}; sent too, but {who} does not count them against its window")
            for p in outside
        )
        rows += (
            '<tr class="bub-total"><td>whole request</td>'
            f'<td class="bub-num" data-total-tokens="{request.total_tokens}">{request.total_tokens}</td>'
            "<td>every part above, as sent</td></tr>"
        )
    cost = request.cost
    if cost is not None:
        rows += (
            f'<tr class="bub-cost" data-cost="{cost!r}"><td>input cost</td><td class="bub-num">{format_cost(cost)}</td>'
            f"<td>the whole request at {esc(who)}'s input price</td></tr>"
        )
    if request.repeated is not None:
        rows += (
            f'<tr class="bub-repeated" data-repeated-tokens="{request.repeated.tokens}" '
            f'data-repeated-messages="{request.repeated.messages}"><td>repeated</td>'
            f'<td class="bub-num">{request.repeated.tokens}</td><td>{esc(repeated_detail(request.repeated))}</td></tr>'
        )
    recalled = request.view.recalled
    if recalled:
        ids = {entry for entry, _ in recalled}
        tokens = sum(
            count for count, source in zip(request.view.tokens, request.view.sources, strict=True) if source in ids
        )
        rows += (
            f'<tr class="bub-recalled" data-recalled="{esc(" ".join(str(entry) for entry, _ in recalled))}">'
            f'<td>recalled</td><td class="bub-num">{tokens}</td>'
            f"<td>{esc('for the prompt, in the view: ' + recalled_detail(request.view))}</td></tr>"
        )
    model = f" to <code>{esc(request.model)}</code>" if request.model else ""
    priced = "" if cost is None else f" (input cost {format_cost(cost)})"
    return (
        f'<div class="bub-title">The next request{model}{esc(priced)}</div>'
        + gauge_html(request.window_tokens, request.window, window_parts(request), "request:")
        + '<table class="bub-request"><thead><tr><th>part</th><th class="bub-num">tokens</th><th>holds</th></tr>'
        f"</thead><tbody>{rows}</tbody></table>"
    )


def window_parts(request: NextRequest) -> list[tuple[str, int]]:
    """The parts the model measures against its window, for the gauge."""
    return [
        (part.name, part.tokens) for part in request.parts if request.tools_in_window or part.name != "tool schemas"
    ]


def request_text(request: NextRequest) -> str:
    return "\n".join(request_lines(request))
