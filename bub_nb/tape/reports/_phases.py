"""A phase in the Markdown transcript: its anchor's summary first, each citation a link to the entry it cites."""

from __future__ import annotations

from collections.abc import Container, Iterable
from typing import Any

import orjson

from bub_nb.tape.citations import (
    CITING_KEYS,
    CITING_TITLES,
    cited_ids,
    citing_text,
    find_citations,
    format_citation,
    state_sources,
)
from bub_nb.tape.entries import TapeEntry


def entry_target(entry_id: int) -> str:
    """The HTML id an entry's block carries in the transcript, so ``#entry-12`` links to entry 12."""
    return f"entry-{entry_id}"


def target_tag(entry_id: int) -> str:
    return f'<a id="{entry_target(entry_id)}"></a>'


def link_targets(entries: Iterable[TapeEntry]) -> set[int]:
    """The entries some anchor's summary links to: what its text and ``sources`` cite and where its ``range``
    starts, kept to the ids on the tape. Only these get a target, so a transcript without summaries is unchanged."""
    entries = list(entries)
    wanted: set[int] = set()
    for entry in entries:
        state = entry.payload.get("state") if entry.kind == "anchor" else None
        if not isinstance(state, dict):
            continue
        wanted.update(state_sources(state))
        wanted.update(cited_ids(citing_text(state)))
        span = _span(state)
        if span is not None:
            wanted.add(span[0])
    return wanted & {entry.id for entry in entries}


def link_entries(text: str, targets: Container[int]) -> str:
    """``text`` with each citation a Markdown link to its first entry; a citation of an entry with no
    target (one the tape does not hold) stays plain text, so no link points nowhere."""
    pieces, position = [], 0
    for citation in find_citations(text):
        shown = text[citation.start : citation.end]
        pieces.append(text[position : citation.start])
        pieces.append(f"[{shown}](#{entry_target(citation.first)})" if citation.first in targets else shown)
        position = citation.end
    pieces.append(text[position:])
    return "".join(pieces)


def phase_section(anchor: TapeEntry, targets: Container[int]) -> list[str]:
    """The lines that open a phase: heading, where it is, the summary and next steps with linked citations,
    then the rest of the state, one ``key: value`` line each."""
    lines = [f"## ⚓ {anchor.name}", f"<sub>#{anchor.id} · {anchor.date[:19]}</sub>", ""]
    state = anchor.payload.get("state")
    if not isinstance(state, dict) or not state:
        return lines
    texts = {key: value for key in CITING_KEYS if isinstance(value := state.get(key), str) and value.strip()}
    about, told = _about(state) if "summary" in texts else ("", set())
    for key, text in texts.items():
        heading = f"**{CITING_TITLES[key]}**{about if key == 'summary' else ''}"
        lines += [link_entries(f"{heading}: {text.strip()}", targets), ""]
    # The links show what a summary cites, so its sources list would only repeat them.
    hidden = texts.keys() | told | ({"sources"} if "summary" in texts else set())
    rest = {key: value for key, value in state.items() if key not in hidden}
    for key, value in rest.items():
        shown = value if isinstance(value, str) else orjson.dumps(value, default=str).decode()
        lines.append(f"- **{key}**: {shown}")
    if rest:
        lines.append("")
    return lines


def _about(state: dict[str, Any]) -> tuple[str, set[str]]:
    """`` of [#3-#8] · by offline``: the summarised range and the model when the state says them soundly,
    and the keys it told."""
    parts, told = [], set()
    span = _span(state)
    if span is not None:
        parts.append(f" of {format_citation(*span)}")
        told.add("range")
    by = state.get("summarized_by")
    if isinstance(by, str) and by:
        parts.append(f" · by {by}")
        told.add("summarized_by")
    return "".join(parts), told


def _span(state: dict[str, Any]) -> tuple[int, int] | None:
    span = state.get("range")
    if isinstance(span, list) and len(span) == 2 and all(type(v) is int for v in span) and 0 < span[0] <= span[1]:
        return span[0], span[1]
    return None
