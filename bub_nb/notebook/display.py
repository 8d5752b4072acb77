"""What the cells show: answers streamed into one display (plain text in a terminal), the footer under an answer
and the note on an interrupt, and a summary's anchor state as people read it, each citation a link and the raw
state one click away.

Everything here displays through :mod:`bub_nb.markup`: Markdown rendered with raw HTML off and cleaned, published
as ``text/html`` with a plain-text fallback, never as ``text/markdown``."""

from __future__ import annotations

import json
import sys
import time
from typing import TYPE_CHECKING, Any

from IPython.display import display, update_display

from bub_nb.markup import (
    Shown,
    code_block,
    code_span,
    escape,
    markdown_html,
    markdown_inline_html,
    markdown_text,
    unescaped,
    visible_controls,
)
from bub_nb.memory import MemoryZone
from bub_nb.tape.citations import BOOKKEEPING_KEYS, CITING_TITLES, find_citations, format_citation
from bub_nb.tape.locations import readable_tape_name
from bub_nb.tape.reports.prices import format_cost, priced_cost
from bub_nb.tape.reports.transcript import entry_target
from bub_nb.tape.text import payload_text

if TYPE_CHECKING:
    from bub_nb.agent.phase_handoff import HandoffPreview
    from bub_nb.tape import Tape, TapeEntry

_UPDATE_EVERY = 0.08  # seconds between in-place redraws at least; the last one always happens
_GROWTH = 8  # a redraw waits for an eighth more text than the last one showed, so a stream costs O(its length)
_CURSOR = " ▌"
SHOWN_LIMIT = 100_000
"""Characters of an answer a cell shows; the rest is on the tape, and a note under the answer says how much."""


def bounded(text: str, limit: int = SHOWN_LIMIT) -> str:
    """``text`` cut at ``limit`` characters, with a visible note of what was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n\n*… {len(text) - limit:,} more characters, see the tape.*"


def plain_text(markdown: str) -> str:
    """The same text for a terminal, its control characters visible."""
    return visible_controls(markdown)


def show(markdown: str, *, raw_state: dict[str, Any] | None = None) -> None:
    """Display one of bub_nb's confirmations: cleaned HTML in a notebook, the same text as plain text.

    ``raw_state`` adds an anchor's state as JSON in a fold under the text.
    """
    fold = "" if raw_state is None else raw_state_html(raw_state)
    plain = unescaped(markdown)
    if raw_state is not None:
        plain = f"{plain}\n\n{RAW_STATE}\n{raw_state_json(raw_state)}"
    display(Shown(markdown_html(markdown) + fold, plain))


RAW_STATE = "raw state:"


def raw_state_json(state: dict[str, Any]) -> str:
    return json.dumps(state, indent=2, ensure_ascii=False, default=str)


def raw_state_html(state: dict[str, Any]) -> str:
    """An anchor's raw state as JSON, folded away under "raw state" (the plain text has it after ``RAW_STATE``)."""
    return f"<details><summary>raw state</summary><pre><code>{escape(raw_state_json(state))}</code></pre></details>"


def answer_shown(text: str, footer: str = "") -> Shown:
    """An answer (bounded) as cleaned HTML, with bub_nb's footer under it in small print."""
    shown = bounded(text)
    small = f"<p><sub>{markdown_inline_html(footer)}</sub></p>" if footer else ""
    return Shown(markdown_html(shown) + small, shown + (f"\n\n{unescaped(footer)}" if footer else ""))


def rich_frontend(shell: Any) -> bool:
    """Whether displays reach a Jupyter frontend (JupyterLab, Notebook 7, VS Code, nbclient)."""
    kernel = getattr(shell, "kernel", None)
    return kernel is not None and type(shell).__name__ != "TerminalInteractiveShell"


class AnswerDisplay:
    """Shows an answer while it streams and leaves the final answer with its metadata.

    A redraw re-renders what is shown, so redraws come no closer than ``_UPDATE_EVERY`` and each waits for an
    eighth more text than the last one showed: a stream's rendering adds up to a few times its length, whatever
    its size, and what is shown stops at ``SHOWN_LIMIT`` characters.
    """

    def __init__(self, shell: Any, *, stream: bool = True) -> None:
        self.rich = rich_frontend(shell)
        self.stream = stream
        self.text = ""
        self._shown = 0
        self._drawn = 0
        self._last = 0.0
        self._display_id: str | None = None
        if self.rich and stream:
            handle = display(Shown("<p><em>…</em></p>", "…"), display_id=True)
            self._display_id = getattr(handle, "display_id", None)

    def add(self, delta: str) -> None:
        self.text += delta
        if not self.stream:
            return
        if not self.rich:
            sys.stdout.write(visible_controls(delta))
            sys.stdout.flush()
            self._shown = len(self.text)
            return
        now = time.monotonic()
        if now - self._last >= _UPDATE_EVERY and len(self.text) - self._drawn >= self._drawn // _GROWTH:
            self._last, self._drawn = now, len(self.text)
            shown = bounded(self.text)
            update_display(Shown(markdown_html(shown + _CURSOR), shown), display_id=self._display_id)

    def discard(self) -> None:
        """Take the waiting placeholder away: the turn was refused before any answer (the error says why)."""
        if self._display_id is not None:
            update_display(Shown("", ""), display_id=self._display_id)

    def finish(self, text: str, *, footer: str = "", metadata: dict[str, Any] | None = None) -> None:
        """Show the final answer (``text`` may differ from the stream, e.g. a command's output)."""
        if not self.rich:
            rest = text[self._shown :] if text.startswith(self.text[: self._shown]) else "\n" + text
            sys.stdout.write(visible_controls(rest) + ("\n" if not rest.endswith("\n") else ""))
            if footer:
                sys.stdout.write(plain_text(footer).replace("`", "") + "\n")
            sys.stdout.flush()
            return
        shown = answer_shown(text, footer)
        if self._display_id is not None:
            update_display(shown, display_id=self._display_id, metadata=metadata)
        else:
            display(shown, metadata=metadata)


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
    sentences cite nothing (the raw state goes in a fold beside it: :func:`raw_state_html`)."""
    lines = []
    span = state.get("range")
    about = f" of {format_citation(*span)}" if isinstance(span, list) and len(span) == 2 else ""
    by = state.get("summarized_by")
    about += f" · by {markdown_text(by)}" if isinstance(by, str) and by else ""
    for key, title in CITING_TITLES.items():
        value = state.get(key)
        if isinstance(value, str) and value.strip():
            heading = f"**{title}**{about if key == 'summary' else ''}"
            lines += [f"{heading}:\n\n{linked(tape, value.strip())}", ""]
    for key, value in state.items():
        if key not in CITING_TITLES and key not in BOOKKEEPING_KEYS:
            shown = value if isinstance(value, str) else code_span(json.dumps(value, default=str))
            lines.append(f"- **{markdown_text(key)}**: {shown}")
    uncited = state.get("uncited")
    if isinstance(uncited, list) and uncited:
        lines += ["", f"_{len(uncited)} sentence(s) cite nothing._"]
    return "\n".join(lines)


def state_markdown(tape: Tape, state: dict[str, Any]) -> str:
    """An anchor's state as people read it: a summary as text with linked citations, any other state as JSON."""
    if is_summary(state):
        return summary_markdown(tape, state)
    dumped = json.dumps(state, indent=2, ensure_ascii=False, default=str) if state else "(no state)"
    return code_block(dumped, "json")


def handoff_confirmation(tape: Tape, anchor: TapeEntry, state: dict[str, Any], earlier: int | None) -> str:
    """What ``%handoff`` says it wrote: the anchor, then its summary as text (or its state as JSON), and whether the
    tape already held an anchor of that name (``earlier``, its id)."""
    shown = state_markdown(tape, state)
    again = (
        f" The tape already held an anchor **{markdown_text(anchor.name)}** (#{earlier}), from an earlier run of "
        "this cell perhaps: this is a second one, and the name now means the newest."
        if earlier is not None
        else ""
    )
    return (
        f"Handoff **{markdown_text(anchor.name)}** written as entry #{anchor.id} on tape "
        f"{code_span(readable_tape_name(tape))}. "
        f"The next turn's view starts here and carries:\n\n{shown}{again}"
    )


def first_view_text(tape: Tape) -> str:
    """What the next turn on a (forked) tape will see: where its view starts, what it holds, its memory."""
    view = tape.view()
    anchor = view.anchor
    start = f"anchor {markdown_text(anchor.name)}" if anchor is not None else "the first entry"
    keys = (
        ", ".join(markdown_text(key) for key in sorted(anchor.state))
        if anchor is not None and anchor.state
        else "no state"
    )
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
    name = markdown_text(preview.name)
    lines = [f"Preview of handoff **{name}** on tape {code_span(tape.name)}: nothing is written yet.", "", shown, ""]
    if preview.retention is not None:
        kept = preview.retention
        lines.append(f"**What the summary keeps** of {format_citation(*kept.range)}: {kept.short()}")
        lost = kept.lost()
        if lost:
            more = f" and {len(lost) - _LOST_SHOWN} more" if len(lost) > _LOST_SHOWN else ""
            named = [
                f"{code_span(f.artifact.text)} ({markdown_text(f.artifact.kind)}, {linked(tape, f'[#{f.entry}]')})"
                for f in lost[:_LOST_SHOWN]
            ]
            lines.append(f"Lost: {', '.join(named)}{more}.")
        lines.append("")
    lines += [
        f"**The next view**: {preview.tokens_before:,} tokens now, {preview.tokens_after:,} once this is written.",
        "",
        f"Accept it with {code_span(f'%handoff {preview.name} --accept')} (no model is asked again), "
        "before the tape moves on.",
    ]
    return "\n".join(lines)


INTERRUPTED_WITH_TEXT = "*Interrupted: the partial answer is kept on the tape.*"
INTERRUPTED_EMPTY = "*Interrupted before any answer arrived; the prompt is kept on the tape.*"
CUT_SHORT = "Warning: *The answer was cut short; the partial text is on the tape.*"


def interrupted(partial: str) -> str:
    """The cell's last word on an interrupted turn: the partial answer and a note that says what is kept."""
    return f"{partial}\n\n{INTERRUPTED_WITH_TEXT}" if partial else INTERRUPTED_EMPTY


def footer(turn: Any, anchor: str | None, tape: str | None = None) -> str:
    """One line of Markdown under an answer (the display sets it in small print): model, where the view starts,
    its size, the usage, its cost when the model has a price (``set_prices``, ``BubMagics.prices``,
    ``BUB_PRICES``) and the entries written.

    The view's estimate counts the messages taken from the tape; the model's usage also counts the
    system prompt and the tool schemas, so the two are labelled apart.
    """
    if turn.status == "command":  # a comma command's confirmation: the tape it acted on
        return f"on tape {code_span(tape)}" if tape else ""
    parts = [markdown_text(turn.model)]
    if anchor:
        parts.append(f"view from anchor {markdown_text(anchor)}")
    if turn.view is not None:
        view = turn.view
        parts.append(
            f"view: {len(view.messages)} messages ≈ {view.total_tokens} tokens, without system prompt and tools"
        )
    if turn.usage is not None:
        usage = turn.usage
        cached = f" ({usage.cached_tokens} cached)" if usage.cached_tokens else ""
        reasoning = f" ({usage.reasoning_tokens} reasoning)" if usage.reasoning_tokens else ""
        parts.append(
            f"usage {usage.prompt_tokens} prompt{cached} + {usage.completion_tokens} completion{reasoning} tokens"
        )
        cost = priced_cost(turn.model, usage.prompt_tokens, usage.completion_tokens)
        if cost is not None:
            parts.append(f"cost {format_cost(cost)}")
    if turn.entries:
        ids = [entry.id for entry in turn.entries]
        parts.append(f"entries #{min(ids)}–#{max(ids)}")  # a range reads low to high, whatever wrote it
    return " · ".join(parts)
