"""A view as plain text, Markdown and HTML, for terminals and notebooks alike."""

from __future__ import annotations

import html
import json
from typing import TYPE_CHECKING, Any, Protocol

from bub_nb.context.messages import Message
from bub_nb.markup import markdown_text

if TYPE_CHECKING:
    from bub_nb.tape import AnchorSummary


class ReportedUsage(Protocol):
    @property
    def prompt_tokens(self) -> int: ...

    @property
    def completion_tokens(self) -> int: ...


class Shown(Protocol):
    """What the renderers read of a view (:class:`~bub_nb.context.View` is one)."""

    @property
    def messages(self) -> tuple[Message, ...]: ...

    @property
    def entry_ids(self) -> tuple[int, ...]: ...

    @property
    def anchor(self) -> AnchorSummary | None: ...

    @property
    def tokens(self) -> tuple[int, ...]: ...

    @property
    def total_tokens(self) -> int: ...

    @property
    def mode(self) -> str: ...

    @property
    def usage(self) -> ReportedUsage | None: ...

    @property
    def sources(self) -> tuple[int, ...]: ...

    @property
    def dropped(self) -> tuple[int, ...]: ...

    @property
    def tokenizer(self) -> str: ...


PREVIEW_CHARS = 100


def message_preview(message: Message, width: int = PREVIEW_CHARS) -> str:
    """One line that says what a message holds: its text, the tools it calls or the tool it answers."""
    content = message.get("content")
    if isinstance(content, list):
        content = " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    text = content if isinstance(content, str) else ""
    calls = [_call_text(call) for call in message.get("tool_calls") or () if isinstance(call, dict)]
    if calls:
        text = " ".join(filter(None, [text, "→ " + ", ".join(calls)]))
    if message.get("role") == "tool" and message.get("name"):
        text = f"{message['name']} ← {text}"
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def _call_text(call: dict[str, Any]) -> str:
    found = call.get("function")
    function: dict[str, Any] = found if isinstance(found, dict) else {}
    arguments = function.get("arguments", "")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return f"{function.get('name', '?')}({arguments})"


def _plural(count: int, one: str, many: str | None = None) -> str:
    return f"{count} {one if count == 1 else many or one + 's'}"


def summary_line(view: Shown) -> str:
    if view.anchor is not None:
        start = f"from anchor {view.anchor.name!r} (#{view.anchor.id})"
    else:
        start = f"from entry #{view.entry_ids[0]}" if view.entry_ids else "with nothing to send"
    parts = [
        f"View [{view.mode}] {start}",
        f"{_plural(len(view.messages), 'message')} from {_plural(len(view.entry_ids), 'entry', 'entries')}",
        f"~{view.total_tokens} tokens ({view.tokenizer})",
    ]
    if view.usage is not None:
        parts.append(f"last run reported prompt {view.usage.prompt_tokens}, completion {view.usage.completion_tokens}")
    recalled = getattr(view, "recalled", ())
    if recalled:
        by = getattr(view, "recalled_by", "")
        found = ", ".join(f"#{entry} ({score:.2f})" for entry, score in recalled)
        parts.append(f"recalled {found}" + (f", ranked by {by}" if by else ""))
    if view.dropped:
        parts.append(f"left out to stay valid: {', '.join(f'#{i}' for i in view.dropped)}")
    return " · ".join(parts)


def _rows(view: Shown) -> list[tuple[str, str, str, str]]:
    return [
        (f"#{source}", str(message.get("role", "?")), str(tokens), message_preview(message))
        for message, source, tokens in zip(view.messages, view.sources, view.tokens, strict=True)
    ]


def view_text(view: Shown) -> str:
    lines = [summary_line(view)]
    for entry, role, tokens, preview in _rows(view):
        lines.append(f"{entry:>7}  {role:<9} {tokens:>6}  {preview}")
    return "\n".join(lines)


def view_markdown(view: Shown) -> str:
    lines = [f"**{_md(summary_line(view))}**", "", "| entry | role | tokens | content |", "|---:|---|---:|---|"]
    for entry, role, tokens, preview in _rows(view):
        lines.append(f"| {entry} | {_md(role)} | {tokens} | {_md(preview)} |")
    return "\n".join(lines)


def _md(text: str) -> str:
    return markdown_text(text)


def view_html(view: Shown) -> str:
    rows = "".join(
        f"<tr><td>{entry}</td><td>{html.escape(role)}</td><td style='text-align:right'>{tokens}</td>"
        f"<td>{html.escape(preview)}</td></tr>"
        for entry, role, tokens, preview in _rows(view)
    )
    return (
        f"<div class='bub-nb-view'><p><b>{html.escape(summary_line(view))}</b></p>"
        "<table><thead><tr><th>entry</th><th>role</th><th>tokens</th><th>content</th></tr></thead>"
        f"<tbody>{rows}</tbody></table></div>"
    )
