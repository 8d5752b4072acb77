"""The Markdown transcript of a tape, phase by phase with each summary's citations linked, and the anchor table."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from bub_nb.tape.anchors import AnchorSummary
from bub_nb.tape.corrections.unreached import record_export
from bub_nb.tape.entries import TapeEntry, is_memory_bound, is_phase_anchor
from bub_nb.tape.events import NOTEBOOK_CELL, RETRACT, RUN, UNRETRACT, retracted_ids, run_data
from bub_nb.tape.info import TapeInfo
from bub_nb.tape.redact import redact, redact_text
from bub_nb.tape.reports.prices import format_cost
from bub_nb.tape.reports.usage import PhaseUsage, phase_usage
from bub_nb.tape.text import entry_text, json_text

if TYPE_CHECKING:
    import pandas as pd

import re
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

_LIST_START = re.compile(r"^(?:[-*\u2022]|\d+[.)])\s")
_ROLE_TITLES = {"user": "User", "assistant": "Assistant", "tool": "Tool"}


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in text.splitlines()) or ">"


def _entry_markdown(entry: TapeEntry) -> str | None:
    match entry.kind:
        case "message":
            role = str(entry.payload.get("role", ""))
            title = _ROLE_TITLES.get(role, role or "message")
            partial = " *(partial: interrupted)*" if entry.meta.get("partial") else ""
            return f"**{title}**{partial} · #{entry.id}\n\n{entry_text(entry)}"
        case "tool_call":
            return f"*tool call* · #{entry.id}\n\n```\n{entry_text(entry)}\n```"
        case "tool_result":
            return f"*tool result* · #{entry.id}\n\n```\n{entry_text(entry)[:4000]}\n```"
        case "error":
            return f"**error** · #{entry.id}: {entry_text(entry)}"
        case "anchor" | "event" if is_memory_bound(entry):
            bound = entry.payload.get("state" if entry.kind == "anchor" else "data")
            version = bound.get("version") if isinstance(bound, dict) else None
            return f"*{entry.name}*" + (f" v{version}" if version is not None else "") + f" · #{entry.id}"
        case "event" if (entry.name or "").startswith("memory."):
            data = entry.payload.get("data") or {}
            day = f" {data['date']}" if data.get("date") else ""
            return f"*{entry.name}*{day} · #{entry.id}\n\n{_quote(str(data.get('content', '')))}"
        case "event" if entry.name == RUN:
            return f"<sub>{_run_line(run_data(entry) or {})}</sub>"
        case "event" if entry.name in (RETRACT, UNRETRACT):
            data = entry.payload.get("data") or {}
            reason = f": {data['reason']}" if data.get("reason") else ""
            return f"*{entry.name} {data.get('asked', '')}* · #{entry.id}{reason}"
        case "event" if entry.name == NOTEBOOK_CELL:
            data = entry.payload.get("data") or {}
            error = f"\n\n**error:** {data['error']}" if data.get("error") else ""
            return f"*cell [{data.get('cell')}]* · #{entry.id}\n\n```python\n{data.get('source', '')}\n```{error}"
    return None


def _run_line(data: dict[str, object]) -> str:
    """``run ok · model · 812 ms, 2560 tokens``, leaving out what a run event does not say (Bub's record no time)."""
    parts = [f"run {data.get('status') or '?'}"]
    if data.get("model"):
        parts.append(str(data["model"]))
    elapsed = data.get("elapsed_ms")
    if isinstance(elapsed, int | float) and not isinstance(elapsed, bool):
        parts.append(f"{elapsed:.0f} ms")
    usage = data.get("usage")
    total = usage.get("total_tokens") if isinstance(usage, dict) else None
    line = " · ".join(parts)
    return line + (f", {total} tokens" if total is not None else "")


class TranscribedTape(Protocol):
    """What a transcript and the anchor table read of a tape (``Tape`` is one)."""

    @property
    def name(self) -> str: ...

    @property
    def last_id(self) -> int: ...

    def read(self, start: int = 1, stop: int | None = None, kinds: Sequence[str] = ()) -> list[TapeEntry]: ...

    def anchors(self, limit: int | None = 20) -> list[AnchorSummary]: ...

    def info(self) -> TapeInfo: ...


def transcript_markdown(tape: TranscribedTape, *, title: str | None = None) -> str:
    """The whole tape as Markdown: one section per phase, each opening with its handoff state."""
    lines = [f"# {title or f'Tape {tape.name}'}", ""]
    info = tape.info()
    lines += [f"{info.entries} entries, {info.anchors} anchors · `{info.location}`", ""]
    entries = tape.read()
    targets = link_targets(entries)
    retracted = retracted_ids(entries)
    for entry in entries:
        # An entry a summary cites is a link target; the tag joins the paragraph of the entry's block.
        target = [target_tag(entry.id)] if entry.id in targets else []
        if entry.kind == "anchor" and is_phase_anchor(entry.name):
            lines += [*target, *phase_section(entry, targets)]
            continue
        block = _entry_markdown(entry)
        if block is not None:
            lines += [*target, f"*(retracted)* {block}" if entry.id in retracted else block, ""]
        elif target:
            lines += [*target, ""]
    lines += budget_markdown(phase_usage(entries))
    # A line another writer put on the tape may hold a key bub_nb never saw; an export must not carry it.
    return redact_text("\n".join(lines).rstrip() + "\n")


def budget_markdown(phases: list[PhaseUsage]) -> list[str]:
    """A table of turns, tokens and cost per phase; a phase with a turn on an unpriced model costs "–"."""
    if not phases:
        return []
    lines = [
        "## Budget per phase",
        "",
        "| phase | turns | tokens in | tokens out | cost |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for phase in phases:
        name = f"anchor {phase.phase}" if phase.phase is not None else "(before the first anchor)"
        cost = "–" if phase.cost is None else format_cost(phase.cost)
        lines.append(f"| {name} | {phase.turns} | {phase.tokens_in} | {phase.tokens_out} | {cost} |")
    return [*lines, ""]


def anchors_frame(tape: TranscribedTape) -> pd.DataFrame:
    """Every anchor with its id, date, state, the entries written since it and up to the next phase anchor
    (``entries_until_next``: for a phase anchor, the entries of its phase), and what its
    summary cites: ``sources`` (the cited ids), ``references`` (the ``tape://`` addresses of other tapes' entries
    its carried lines cite) and ``uncited`` (how many sentences cite nothing; empty when the state does not say,
    as for a plain handoff)."""
    import pandas as pd

    anchors = tape.anchors(limit=None)
    last_id = tape.last_id
    rows = []
    # An anchor's phase runs to the next phase anchor: a memory anchor inside it does not end it.
    next_phase, following = [], last_id + 1
    for anchor in reversed(anchors):
        next_phase.append(following)
        following = anchor.id if is_phase_anchor(anchor.name) else following
    next_phase.reverse()
    for anchor, next_id in zip(anchors, next_phase, strict=True):
        rows.append(
            {
                "name": anchor.name,
                "id": anchor.id,
                "date": anchor.date,
                "state": anchor.state,
                "entries_since": last_id - anchor.id,
                "entries_until_next": next_id - anchor.id - 1,
                "sources": list(anchor.sources),
                "references": list(anchor.references),
                "uncited": None if anchor.uncited is None else len(anchor.uncited),
            }
        )
    columns = ["name", "id", "date", "state", "entries_since", "entries_until_next", "sources", "references", "uncited"]
    frame = pd.DataFrame(rows, columns=columns)
    frame["date"] = pd.to_datetime(frame["date"], utc=True, format="ISO8601")
    frame["uncited"] = frame["uncited"].astype("Int64")
    return frame


def write_jsonl(tape: TranscribedTape, path: str | Path) -> int:
    """Copy the tape's entries to ``path`` as JSON Lines in Bub's format, and record the export on the tape;
    returns how many."""
    count = 0
    with open(path, "wb") as handle:
        for entry in tape.read():
            clean = TapeEntry(entry.id, entry.kind, redact(entry.payload), redact(entry.meta), entry.date)
            handle.write(clean.to_line())
            count += 1
    record_export([tape], path, "jsonl")  # so a redaction can name the file
    return count


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
        # Bounded by the anchor: a summary cites what came before it, however wide a citation claims to be.
        wanted.update(state_sources(state, entry.id - 1))
        wanted.update(cited_ids(citing_text(state), entry.id - 1))
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
    lines = [f"## Anchor {anchor.name}", f"<sub>#{anchor.id} · {anchor.date[:19]}</sub>", ""]
    state = anchor.payload.get("state")
    if not isinstance(state, dict) or not state:
        return lines
    texts = {key: value for key in CITING_KEYS if isinstance(value := state.get(key), str) and value.strip()}
    about, told = _about(state) if "summary" in texts else ("", set())
    for key, text in texts.items():
        heading = f"**{CITING_TITLES[key]}**{about if key == 'summary' else ''}"
        text = text.strip()
        # A summary written as a list (the offline model's is) starts on its own line, so the list renders.
        shown = f"{heading}:\n\n{text}" if "\n" in text or _LIST_START.match(text) else f"{heading}: {text}"
        lines += [link_entries(shown, targets), ""]
    # The links show what a summary cites, so its sources list would only repeat them.
    empty = {key for key in CITING_KEYS if state.get(key) == ""}
    hidden = texts.keys() | told | empty | ({"sources"} if "summary" in texts else set())
    rest = {key: value for key, value in state.items() if key not in hidden}
    for key, value in rest.items():
        shown = value if isinstance(value, str) else json_text(value)
        lines.append(f"- **{key}**: {shown}")
    if rest:
        lines.append("")
    if "summary" in texts:  # the state as written stays one click away
        try:
            raw = orjson.dumps(state, option=orjson.OPT_INDENT_2, default=str).decode()
        except orjson.JSONEncodeError:  # a lone surrogate or an integer beyond 64 bits, written escaped
            raw = json.dumps(state, indent=2, default=str)
        lines += ["<details><summary>raw state</summary>", "", f"```json\n{raw}\n```", "", "</details>", ""]
    return lines


def _about(state: dict[str, Any]) -> tuple[str, set[str]]:
    """`` of [#3-#8] · by offline``: the summarized range and the model when the state says them soundly,
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
