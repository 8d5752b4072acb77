"""The messages of a view, each with its role and token estimate, as HTML and as text; an anchor's summary as
text whose citations reference their entries, its raw state one click away."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from bub_nb.context.display import message_preview
from bub_nb.markup import role_class
from bub_nb.notebook.widgets._style import KIND_COLORS, bar, clip, esc
from bub_nb.tape.citations import CITING_TITLES, find_citations
from bub_nb.tape.reports.prices import format_cost, priced_cost

if TYPE_CHECKING:
    from collections.abc import Iterable

    from bub_nb.context import View
    from bub_nb.context.messages import Message
    from bub_nb.context.view import RunUsage
    from bub_nb.tape import TapeEntry

BODY_CHARS: Final = 4000
PREVIEW_CHARS: Final = 110
TEXT_PREVIEW_CHARS: Final = 72  # keeps a text row within a 100-column terminal
BAR_PX: Final = 60


@dataclass(frozen=True, slots=True)
class MessageRow:
    index: int
    source: int
    role: str
    tokens: int
    preview: str
    body: str


def message_body(message: Message) -> str:
    """Everything a message carries, readable: its text, the calls it makes, the call it answers."""
    content = message.get("content")
    if isinstance(content, list):
        content = "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    lines = [content] if isinstance(content, str) and content else []
    for call in message.get("tool_calls") or ():
        if not isinstance(call, dict):
            continue
        found = call.get("function")
        function: dict[str, Any] = found if isinstance(found, dict) else {}
        arguments = function.get("arguments", "")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        lines.append(f"→ {function.get('name', '?')}({arguments})  [{call.get('id', '')}]")
    if message.get("role") == "tool":
        lines.insert(0, f"← {message.get('name', '?')} [{message.get('tool_call_id', '')}]")
    body = "\n".join(lines)
    return body if len(body) <= BODY_CHARS else body[:BODY_CHARS] + f"\n… ({len(body) - BODY_CHARS} more characters)"


_ANCHOR: Final = re.compile(r"^\[Anchor created: (?P<name>[^\]]*)\]:\s*(?P<state>\{.*\})\s*$", re.DOTALL)


def anchor_summary(message: Message) -> tuple[str, dict[str, Any]] | None:
    """The anchor name and state an anchor message carries, when its state holds a summary."""
    content = message.get("content")
    match = _ANCHOR.match(content) if message.get("role") == "assistant" and isinstance(content, str) else None
    if match is None:
        return None
    try:
        state = json.loads(match["state"])
    except ValueError:
        return None
    return (match["name"], state) if isinstance(state, dict) and isinstance(state.get("summary"), str) else None


def cited_html(text: str) -> str:
    """``text`` escaped, each citation a reference to its entry (``a.bub-cite`` with ``data-entry-id``)."""
    pieces, position = [], 0
    for citation in find_citations(text):
        shown = text[citation.start : citation.end]
        pieces.append(esc(text[position : citation.start]))
        pieces.append(
            f'<a class="bub-cite" href="#entry-{citation.first}" data-entry-id="{citation.first}" '
            f'title="entry #{citation.first}">{esc(shown)}</a>'
        )
        position = citation.end
    pieces.append(esc(text[position:]))
    return "".join(pieces).replace("\n", "<br>")


def summary_html(state: dict[str, Any]) -> str:
    """A summary's state as people read it: the summary and next steps with their citations referenced, then the
    raw state in a fold."""
    parts = [
        f'<div class="bub-summary-text"><b>{title}</b>: {cited_html(value.strip())}</div>'
        for key, title in CITING_TITLES.items()
        if isinstance(value := state.get(key), str) and value.strip()
    ]
    raw = json.dumps(state, indent=2, ensure_ascii=False, default=str)
    parts.append(f"<details><summary>raw state</summary><pre>{esc(raw)}</pre></details>")
    return f'<div class="bub-summary">{"".join(parts)}</div>'


def summary_states(entries: Iterable[TapeEntry]) -> dict[int, dict[str, Any]]:
    """``anchor id -> state`` for the anchors among ``entries`` whose state holds a summary."""
    states = ((entry.id, entry.payload.get("state")) for entry in entries if entry.kind == "anchor")
    return {i: state for i, state in states if isinstance(state, dict) and isinstance(state.get("summary"), str)}


def folded(label: str, state: dict[str, Any] | None) -> str:
    """``label`` (HTML), or with a summary's ``state`` a fold that opens on the summary (:func:`summary_html`)."""
    return label if state is None else f"<details><summary>{label}</summary>{summary_html(state)}</details>"


def summary_preview(name: str, state: dict[str, Any], width: int) -> str:
    """One line for an anchor message with a summary: how the model is told of the anchor, then the summary's
    opening words as text (the JSON it was sent in is in the fold)."""
    return clip(f"[Anchor created: {name}] summary: " + " ".join(str(state.get("summary", "")).split()), width)


def message_rows(view: View, limit: int) -> tuple[list[MessageRow], int, int]:
    """Rows for the view's messages; past ``limit`` the middle is left out so the start and end show.

    Returns the rows, where the gap falls (row position) and how many messages it holds.
    """
    count = len(view.messages)
    if count <= limit:
        kept, gap_at, gap = list(range(count)), count, 0
    else:
        head = min(10, limit // 4)
        kept = [*range(head), *range(count - (limit - head), count)]
        gap_at, gap = head, count - limit
    rows = []
    for i in kept:
        message = view.messages[i]
        role = str(message.get("role", "?"))
        anchored = anchor_summary(message)
        preview = summary_preview(*anchored, PREVIEW_CHARS) if anchored else message_preview(message, PREVIEW_CHARS)
        rows.append(MessageRow(i, view.sources[i], role, view.tokens[i], preview, message_body(message)))
    return rows, gap_at, gap


def _gap_tokens(view: View, rows: list[MessageRow]) -> int:
    return sum(view.tokens) - sum(row.tokens for row in rows)


def messages_html(view: View, limit: int) -> str:
    rows, gap_at, gap = message_rows(view, limit)
    peak = max(view.tokens, default=0)
    cells = []
    for position, row in enumerate(rows):
        if position == gap_at and gap:
            cells.append(_gap_row_html(gap, _gap_tokens(view, rows)))
        width = BAR_PX * row.tokens / peak if peak else 0
        content = esc(row.preview)
        if anchored := anchor_summary(view.messages[row.index]):
            content = f"<details><summary>{content}</summary>{summary_html(anchored[1])}</details>"
        elif row.body and " ".join(row.body.split()) != row.preview:
            content = f"<details><summary>{content}</summary><pre>{esc(row.body)}</pre></details>"
        cells.append(
            f'<tr class="bub-message" data-entry-id="{row.source}" data-role="{esc(row.role)}">'
            f'<td class="bub-num">#{row.source}</td>'
            f'<td><span class="bub-role {role_class(row.role)}">{esc(row.role)}</span></td>'
            f'<td class="bub-num">{row.tokens}</td>'
            f"<td>{bar(width, KIND_COLORS['message'], f'{row.tokens} tokens')}</td>"
            f'<td class="bub-content">{content}</td></tr>'
        )
    if gap and gap_at >= len(rows):
        cells.append(_gap_row_html(gap, _gap_tokens(view, rows)))
    if not view.messages:
        cells.append('<tr><td colspan="5" class="bub-muted">(nothing would be sent)</td></tr>')
    total = (
        f'<tr class="bub-total"><td>total</td><td></td><td class="bub-num" data-total-tokens="{view.total_tokens}">'
        f"~{view.total_tokens}</td><td></td><td>{esc(_total_note(view))}{esc(_reported_note(view))}</td></tr>"
    )
    table = (
        '<table class="bub-messages-table"><colgroup><col style="width:4.5em"><col style="width:7.5em">'
        '<col style="width:4.5em"><col style="width:72px"><col></colgroup>'
        '<thead><tr><th class="bub-num">entry</th><th>role</th>'
        '<th class="bub-num">tokens</th><th></th><th>content</th></tr></thead>'
        f"<tbody>{''.join(cells)}{total}</tbody></table>"
    )
    usage = view.usage
    note = ""
    if usage is not None:
        model = f", {usage.model}" if usage.model else ""
        note = (
            f'<div class="bub-note bub-usage" data-prompt-tokens="{usage.prompt_tokens}">{esc(usage_label(view))} '
            f"(#{usage.entry_id}{esc(model)}): prompt <b>{usage.prompt_tokens}</b>"
            f"{_part(usage.cached_tokens, 'cached')} + completion <b>{usage.completion_tokens}</b>"
            f"{_part(usage.reasoning_tokens, 'reasoning')} = "
            f"{usage.total_tokens} tokens, exact as the endpoint reported them{_cost(usage)}.</div>"
        )
    dropped = ""
    if view.dropped:
        ids = ", ".join(f"#{i}" for i in view.dropped)
        dropped = f'<div class="bub-note">Left out to keep the messages valid for the API: {esc(ids)}</div>'
    if view.retracted:
        ids = ", ".join(f"#{i}" for i in view.retracted)
        dropped += f'<div class="bub-note">Retracted, so left out: {esc(ids)}</div>'
    return table + note + dropped


def _cost(usage: RunUsage) -> str:
    """``; cost 0.0012`` at the model's price, when it has one."""
    cost = priced_cost(usage.model, usage.prompt_tokens, usage.completion_tokens)
    return (
        "" if cost is None else f'; <span class="bub-usage-cost" data-cost="{cost!r}">cost {format_cost(cost)}</span>'
    )


def _cost_text(usage: RunUsage) -> str:
    cost = priced_cost(usage.model, usage.prompt_tokens, usage.completion_tokens)
    return "" if cost is None else f"; cost {format_cost(cost)}"


def _part(count: int, what: str) -> str:
    """The part of a count the endpoint reported separately, as ``(N cached)``; nothing when it reported none."""
    return f' <span class="bub-usage-part" data-{what}-tokens="{count}">({count} {what})</span>' if count else ""


def usage_label(view: View) -> str:
    """What the usage a view shows is: the last turn sent with this very view, or one sent with another."""
    usage = view.usage
    if usage is None or usage.sent_with(view):
        return "Last turn sent with this view"
    if usage.sent_mode is None:
        return "Last turn among these entries, its view not recorded"
    start = f" from #{usage.sent_anchor}" if usage.sent_anchor is not None else ""
    return f"Last turn among these entries, sent with another view ([{usage.sent_mode}]{start})"


def _gap_row_html(count: int, tokens: int) -> str:
    return (
        f'<tr class="bub-gap"><td></td><td></td><td class="bub-num bub-muted">~{tokens}</td><td></td>'
        f'<td class="bub-muted">… {count} more messages not listed …</td></tr>'
    )


def _total_note(view: View) -> str:
    count = len(view.messages)
    return f"estimated: {count} message{'s' if count != 1 else ''} + reply priming ({view.tokenizer})"


def _reported_note(view: View) -> str:
    """The endpoint's count beside the estimate, named, and why the two differ."""
    usage = view.usage
    if usage is None:
        return ""
    return (
        f" · reported by the endpoint for #{usage.entry_id}: prompt {usage.prompt_tokens}, the whole request "
        "(system prompt, tool schemas and every call of that turn too)"
    )


def messages_text(view: View, limit: int) -> list[str]:
    rows, gap_at, gap = message_rows(view, limit)
    lines = [f"{'entry':>8}  {'role':<9} {'tokens':>6}  content"]
    for position, row in enumerate(rows):
        if position == gap_at and gap:
            lines.append(f"{'':>8}  {'…':<9} {_gap_tokens(view, rows):>6}  … {gap} more messages not listed …")
        lines.append(
            f"{'#' + str(row.source):>8}  {row.role:<9} {row.tokens:>6}  {clip(row.preview, TEXT_PREVIEW_CHARS)}"
        )
    if gap and gap_at >= len(rows):
        lines.append(f"{'':>8}  {'…':<9} {_gap_tokens(view, rows):>6}  … {gap} more messages not listed …")
    if not view.messages:
        lines.append(f"{'':>8}  (nothing would be sent)")
    lines.append(f"{'total':>8}  {'':<9} {'~' + str(view.total_tokens):>6}  {_total_note(view)}{_reported_note(view)}")
    if view.usage is not None:
        usage = view.usage
        model = f", {usage.model}" if usage.model else ""
        lines.append(
            f"  {usage_label(view).lower()} (#{usage.entry_id}{model}): {usage.parts()} = {usage.total_tokens} tokens, "
            f"exact as reported{_cost_text(usage)}"
        )
    if view.dropped:
        lines.append("  left out to keep the messages valid for the API: " + ", ".join(f"#{i}" for i in view.dropped))
    if view.retracted:
        lines.append("  retracted, so left out: " + ", ".join(f"#{i}" for i in view.retracted))
    return lines
