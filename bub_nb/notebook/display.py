"""What the cells show: answers streamed into one Markdown display (plain text in a terminal), and a summary's
anchor state as people read it, each citation a link and the raw state one click away."""

from __future__ import annotations

import json
import sys
import time
from typing import TYPE_CHECKING, Any

from IPython.display import display, update_display

from bub_nb.memory import MemoryZone
from bub_nb.tape.citations import BOOKKEEPING_KEYS, CITING_TITLES, find_citations, format_citation
from bub_nb.tape.locations import readable_tape_name
from bub_nb.tape.reports.transcript import entry_target
from bub_nb.tape.text import payload_text

if TYPE_CHECKING:
    from bub_nb.agent.phase_handoff import HandoffPreview
    from bub_nb.tape import Tape, TapeEntry

_UPDATE_EVERY = 0.08  # seconds between in-place redraws; the last one always happens
_CURSOR = " ▌"


class MarkdownText:
    """Markdown for notebooks whose ``text/plain`` is the text itself, for terminals and saved-notebook readers.

    IPython's ``Markdown`` object leaves ``<IPython.core.display.Markdown object>`` as its plain text.
    """

    def __init__(self, markdown: str, plain: str | None = None) -> None:
        self.markdown = markdown
        self.plain = plain_text(markdown) if plain is None else plain

    def _repr_markdown_(self) -> str:
        return self.markdown

    def __repr__(self) -> str:
        return self.plain

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(self.plain)


def plain_text(markdown: str) -> str:
    """The same text for a terminal: only the ``<sub>`` tags around a footer go."""
    return markdown.replace("<sub>", "").replace("</sub>", "")


def show(markdown: str) -> None:
    """Display one of bub_nb's confirmations: Markdown in a notebook, the same text as plain text."""
    display(MarkdownText(markdown))


def rich_frontend(shell: Any) -> bool:
    """Whether displays reach a Jupyter frontend (JupyterLab, Notebook 7, VS Code, nbclient)."""
    kernel = getattr(shell, "kernel", None)
    return kernel is not None and type(shell).__name__ != "TerminalInteractiveShell"


class AnswerDisplay:
    """Shows an answer while it streams and leaves the final Markdown with its metadata."""

    def __init__(self, shell: Any, *, stream: bool = True) -> None:
        self.rich = rich_frontend(shell)
        self.stream = stream
        self.text = ""
        self._shown = 0
        self._last = 0.0
        self._display_id: str | None = None
        if self.rich and stream:
            handle = display(MarkdownText("*…*", "…"), display_id=True)
            self._display_id = getattr(handle, "display_id", None)

    def add(self, delta: str) -> None:
        self.text += delta
        if not self.stream:
            return
        if not self.rich:
            sys.stdout.write(delta)
            sys.stdout.flush()
            self._shown = len(self.text)
            return
        now = time.monotonic()
        if now - self._last >= _UPDATE_EVERY:
            self._last = now
            update_display(MarkdownText(self.text + _CURSOR, self.text), display_id=self._display_id)

    def discard(self) -> None:
        """Take the waiting placeholder away: the turn was refused before any answer (the error says why)."""
        if self._display_id is not None:
            update_display(MarkdownText("", ""), display_id=self._display_id)

    def finish(self, text: str, *, footer: str = "", metadata: dict[str, Any] | None = None) -> None:
        """Show the final answer (``text`` may differ from the stream, e.g. a command's output)."""
        body = text + (f"\n\n{footer}" if footer else "")
        if not self.rich:
            rest = text[self._shown :] if text.startswith(self.text[: self._shown]) else "\n" + text
            sys.stdout.write(rest + ("\n" if not rest.endswith("\n") else ""))
            if footer:
                sys.stdout.write(plain_text(footer).replace("`", "") + "\n")
            sys.stdout.flush()
            return
        if self._display_id is not None:
            update_display(MarkdownText(body), display_id=self._display_id, metadata=metadata)
        else:
            display(MarkdownText(body), metadata=metadata)


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


def state_markdown(tape: Tape, state: dict[str, Any]) -> str:
    """An anchor's state as people read it: a summary as text with linked citations, any other state as JSON."""
    if is_summary(state):
        return summary_markdown(tape, state)
    dumped = json.dumps(state, indent=2, ensure_ascii=False, default=str) if state else "(no state)"
    return f"```json\n{dumped}\n```"


def handoff_confirmation(tape: Tape, anchor: TapeEntry, state: dict[str, Any], earlier: int | None) -> str:
    """What ``%handoff`` says it wrote: the anchor, then its summary as text (or its state as JSON), and whether the
    tape already held an anchor of that name (``earlier``, its id)."""
    shown = state_markdown(tape, state)
    again = (
        f" The tape already held an anchor **{anchor.name}** (#{earlier}), from an earlier run of this cell "
        "perhaps: this is a second one, and the name now means the newest."
        if earlier is not None
        else ""
    )
    return (
        f"Handoff **{anchor.name}** written as entry #{anchor.id} on tape `{readable_tape_name(tape)}`. "
        f"The next turn's view starts here and carries:\n\n{shown}{again}"
    )


def first_view_text(tape: Tape) -> str:
    """What the next turn on a (forked) tape will see: where its view starts, what it holds, its memory."""
    view = tape.view()
    anchor = view.anchor
    start = f"anchor {anchor.name}" if anchor is not None else "the first entry"
    keys = ", ".join(sorted(anchor.state)) if anchor is not None and anchor.state else "no state"
    version = MemoryZone(tape).read().version
    memory = f"memory v{version}" if version else "no saved memory"
    return (
        f"Its first view starts at {start} ({keys}) and holds {len(view.messages)} messages "
        f"(≈{view.total_tokens} tokens), with {memory}."
    )


_LOST_SHOWN = 12


def preview_markdown(preview: HandoffPreview) -> str:
    """What ``%handoff NAME --preview`` shows: the summary with its citations linked, what it keeps of the phase
    (and where each lost artifact lived), the next view's tokens before and after, and how to accept it."""
    tape, state = preview.tape, preview.state
    shown = state_markdown(tape, state)
    lines = [f"Preview of handoff **{preview.name}** on tape `{tape.name}`: nothing is written yet.", "", shown, ""]
    if preview.retention is not None:
        kept = preview.retention
        lines.append(f"**What the summary keeps** of {format_citation(*kept.range)}: {kept.short()}")
        lost = kept.lost()
        if lost:
            more = f" and {len(lost) - _LOST_SHOWN} more" if len(lost) > _LOST_SHOWN else ""
            named = [
                f"`{f.artifact.text}` ({f.artifact.kind}, {linked(tape, f'[#{f.entry}]')})" for f in lost[:_LOST_SHOWN]
            ]
            lines.append(f"Lost: {', '.join(named)}{more}.")
        lines.append("")
    lines += [
        f"**The next view**: {preview.tokens_before:,} tokens now, {preview.tokens_after:,} once this is written.",
        "",
        f"Accept it with `%handoff {preview.name} --accept` (no model is asked again), before the tape moves on.",
    ]
    return "\n".join(lines)
