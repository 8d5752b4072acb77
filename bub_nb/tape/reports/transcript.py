"""Readable reports of a tape: a Markdown transcript per phase, and the anchor table."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from bub_nb.tape.entries import TapeEntry, is_phase_anchor
from bub_nb.tape.events import NOTEBOOK_CELL, RUN, run_data
from bub_nb.tape.redact import redact, redact_text
from bub_nb.tape.reports._phases import link_targets, phase_section, target_tag
from bub_nb.tape.reports.prices import format_cost
from bub_nb.tape.reports.usage import PhaseUsage, phase_usage
from bub_nb.tape.text import entry_text

if TYPE_CHECKING:
    import pandas as pd

    from bub_nb.tape.tape import Tape

_ROLE_TITLES = {"user": "🧑 User", "assistant": "🤖 Assistant", "tool": "🔧 Tool"}


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
            return f"🔧 *tool call* · #{entry.id}\n\n```\n{entry_text(entry)}\n```"
        case "tool_result":
            return f"🔧 *tool result* · #{entry.id}\n\n```\n{entry_text(entry)[:4000]}\n```"
        case "error":
            return f"⚠️ **error** · #{entry.id}: {entry_text(entry)}"
        case "anchor" if not is_phase_anchor(entry.name):
            version = (entry.payload.get("state") or {}).get("version")
            return f"🧠 *{entry.name}*" + (f" v{version}" if version is not None else "") + f" · #{entry.id}"
        case "event" if (entry.name or "").startswith("memory."):
            data = entry.payload.get("data") or {}
            day = f" {data['date']}" if data.get("date") else ""
            return f"🧠 *{entry.name}*{day} · #{entry.id}\n\n{_quote(str(data.get('content', '')))}"
        case "event" if entry.name == RUN:
            return f"<sub>{_run_line(run_data(entry) or {})}</sub>"
        case "event" if entry.name == NOTEBOOK_CELL:
            data = entry.payload.get("data") or {}
            error = f"\n\n⚠️ {data['error']}" if data.get("error") else ""
            return f"📓 *cell [{data.get('cell')}]* · #{entry.id}\n\n```python\n{data.get('source', '')}\n```{error}"
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


def transcript_markdown(tape: Tape, *, title: str | None = None) -> str:
    """The whole tape as Markdown: one section per phase, each opening with its handoff state."""
    lines = [f"# {title or f'Tape {tape.name}'}", ""]
    info = tape.info()
    lines += [f"{info.entries} entries, {info.anchors} anchors · `{info.location}`", ""]
    entries = tape.read()
    targets = link_targets(entries)
    for entry in entries:
        # An entry a summary cites is a link target; the tag joins the paragraph of the entry's block.
        target = [target_tag(entry.id)] if entry.id in targets else []
        if entry.kind == "anchor" and is_phase_anchor(entry.name):
            lines += [*target, *phase_section(entry, targets)]
            continue
        block = _entry_markdown(entry)
        if block is not None:
            lines += [*target, block, ""]
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
        name = f"⚓ {phase.phase}" if phase.phase is not None else "(before the first anchor)"
        cost = "–" if phase.cost is None else format_cost(phase.cost)
        lines.append(f"| {name} | {phase.turns} | {phase.tokens_in} | {phase.tokens_out} | {cost} |")
    return [*lines, ""]


def anchors_frame(tape: Tape) -> pd.DataFrame:
    """Every anchor with its id, date, state, the entries written since it and in its phase, and what its
    summary cites: ``sources`` (the cited ids) and ``uncited`` (how many sentences cite nothing; empty
    when the state does not say, as for a plain handoff)."""
    import pandas as pd

    anchors = tape.anchors(limit=None)
    last_id = tape.last_id
    rows = []
    for index, anchor in enumerate(anchors):
        next_id = anchors[index + 1].id if index + 1 < len(anchors) else last_id + 1
        rows.append(
            {
                "name": anchor.name,
                "id": anchor.id,
                "date": anchor.date,
                "state": anchor.state,
                "entries_since": last_id - anchor.id,
                "entries_until_next": next_id - anchor.id - 1,
                "sources": list(anchor.sources),
                "uncited": None if anchor.uncited is None else len(anchor.uncited),
            }
        )
    columns = ["name", "id", "date", "state", "entries_since", "entries_until_next", "sources", "uncited"]
    frame = pd.DataFrame(rows, columns=columns)
    frame["date"] = pd.to_datetime(frame["date"], utc=True, format="ISO8601")
    frame["uncited"] = frame["uncited"].astype("Int64")
    return frame


def write_jsonl(tape: Tape, path: str | Path) -> int:
    """Copy the tape's entries to ``path`` as JSON Lines in Bub's format; returns how many."""
    count = 0
    with open(path, "wb") as handle:
        for entry in tape.read():
            clean = TapeEntry(entry.id, entry.kind, redact(entry.payload), redact(entry.meta), entry.date)
            handle.write(clean.to_line())
            count += 1
    return count
