"""A summary's anchor state as people read it: its text with each citation a link, the raw state one click away."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from bub_nb.tape.citations import BOOKKEEPING_KEYS, CITING_TITLES, find_citations, format_citation
from bub_nb.tape.reports.transcript import entry_target
from bub_nb.tape.text import payload_text

if TYPE_CHECKING:
    from bub_nb.tape import Tape

_PREVIEW = 100


def _preview(tape: Tape, entry_id: int) -> str | None:
    found = tape.read(entry_id, entry_id + 1)
    if not found:
        return None
    text = " ".join(payload_text(found[0].kind, found[0].payload).split())
    text = text if len(text) <= _PREVIEW else text[: _PREVIEW - 1] + "…"
    return f"#{entry_id} {found[0].kind}: {text}".replace('"', "'")


def linked(tape: Tape, text: str) -> str:
    """``text`` with each citation a Markdown link to its first entry, titled with that entry's opening words;
    a citation of an entry the tape does not hold stays plain text."""
    pieces, position = [], 0
    for citation in find_citations(text):
        shown = text[citation.start : citation.end]
        title = _preview(tape, citation.first)
        pieces += [
            text[position : citation.start],
            shown if title is None else f'[{shown}](#{entry_target(citation.first)} "{title}")',
        ]
        position = citation.end
    pieces.append(text[position:])
    return "".join(pieces)


def is_summary(state: Any) -> bool:
    return isinstance(state, dict) and isinstance(state.get("summary"), str)


def summary_markdown(tape: Tape, state: dict[str, Any]) -> str:
    """The summary and next steps as Markdown with linked citations, the other keys one line each, how many
    sentences cite nothing, then the raw state as JSON in a fold."""
    lines = []
    span = state.get("range")
    about = f" of {format_citation(*span)}" if isinstance(span, list) and len(span) == 2 else ""
    by = state.get("summarized_by")
    about += f" · by {by}" if isinstance(by, str) and by else ""
    for key, title in CITING_TITLES.items():
        value = state.get(key)
        if isinstance(value, str) and value.strip():
            heading = f"**{title}**{about if key == 'summary' else ''}"
            lines += [f"{heading}:\n\n{linked(tape, value.strip())}", ""]
    for key, value in state.items():
        if key not in CITING_TITLES and key not in BOOKKEEPING_KEYS:
            lines.append(f"- **{key}**: {value if isinstance(value, str) else json.dumps(value, default=str)}")
    uncited = state.get("uncited")
    if isinstance(uncited, list) and uncited:
        lines += ["", f"_{len(uncited)} sentence(s) cite nothing._"]
    raw = json.dumps(state, indent=2, ensure_ascii=False, default=str)
    lines += ["", "<details><summary>raw state</summary>", "", f"```json\n{raw}\n```", "", "</details>"]
    return "\n".join(lines)
