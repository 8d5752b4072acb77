"""Summaries that cite the tape: a phase summarized by a model (in parts when it is too long), checked, as state.

The phase being closed is the last phase anchor and the entries after it. The model gets them labelled with their
ids and cites them; :func:`~bub_nb.tape.citations.check_citations` removes every citation outside the phase and
counts it. A phase too long for the model's window is summarized in parts that each fit, then the parts' summaries
are summarized together. The result is an anchor's state (see docs/concepts.md#summaries-that-cite) and the data
of the ``summary`` event that records its cost.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from textwrap import shorten
from typing import TYPE_CHECKING, Any, Final

from bub_nb.agent.models.base import Completion, Model, Usage, context_window_of
from bub_nb.agent.models.calibration import scale_of
from bub_nb.agent.summaries.extractive import (
    SUMMARY_INSTRUCTIONS,
    Item,
    carried_references,
    carried_sources,
    clipped,
    extractive_summary,
    request_text,
    split_reply,
)
from bub_nb.agent.summaries.sources import to_sources
from bub_nb.agent.summaries.support import supported_citations
from bub_nb.context.messages import is_hidden
from bub_nb.context.tokens import count_messages_tokens, count_text_tokens
from bub_nb.errors import BubNbError, ContextLengthError
from bub_nb.tape.citations import (
    check_citations,
    find_references,
    without_unknown_references,
    without_unseen_citations,
)
from bub_nb.tape.events import retracted_ids
from bub_nb.tape.text import payload_role, payload_text

if TYPE_CHECKING:
    from bub_nb.tape import Tape

FALLBACK: Final = "offline (extractive fallback)"
"""``summarized_by`` of a summary quoted from the tape because the model's summary failed."""

_KINDS: Final = ("message", "tool_call", "tool_result", "error")
_MAX_DEPTH: Final = 6


@dataclass(frozen=True, slots=True)
class Phase:
    """The phase a handoff closes: its anchor's entry (if any) and the entries after it that a model reads."""

    items: tuple[Item, ...]

    @property
    def range(self) -> tuple[int, int]:
        return (self.items[0].first, self.items[-1].last) if self.items else (0, 0)


@dataclass(frozen=True, slots=True)
class Summary:
    """A checked summary of a phase, and what it cost (one ``requests`` record per model call)."""

    summary: str
    next_steps: str
    sources: tuple[int, ...]
    range: tuple[int, int]
    summarized_by: str
    uncited: tuple[str, ...]
    removed_citations: int
    parts: int = 1
    requests: tuple[dict[str, Any], ...] = ()
    usage: Usage | None = None
    error: str | None = None
    unsupported_citations: int = 0
    """Citations the model gave for a claim the cited entry does not hold, taken out (see ``support``)."""

    def state(self) -> dict[str, Any]:
        """The anchor state of the contract: summary, next steps, sources, range, model, uncited, removed."""
        return {
            "summary": self.summary,
            "next_steps": self.next_steps,
            "sources": list(self.sources),
            "range": list(self.range),
            "summarized_by": self.summarized_by,
            "uncited": list(self.uncited),
            "removed_citations": self.removed_citations,
            "unsupported_citations": self.unsupported_citations,
        }

    def event_data(self, anchor: str) -> dict[str, Any]:
        """The ``summary`` event: which anchor, which model, the range, the parts, each request and the usage."""
        data: dict[str, Any] = {
            "anchor": anchor,
            "model": self.summarized_by,
            "range": list(self.range),
            "parts": self.parts,
            "requests": list(self.requests),
            "usage": self.usage.as_dict() if self.usage else None,
        }
        if self.error:
            data["error"] = self.error
        return data


def closing_phase(tape: Tape) -> Phase:
    """The last phase anchor (with its state) and the messages, tool calls, results and errors after it."""
    items: list[Item] = []
    anchor = tape.last_anchor()
    if anchor is not None:
        state = json.dumps(anchor.state, ensure_ascii=False) if anchor.state else ""
        items.append(Item(anchor.id, anchor.id, "anchor", f"{anchor.name} {state}".strip()))
    retracted = retracted_ids(tape.from_last_anchor(kinds=("event",)))  # taken back: no summary brings it back
    for entry in tape.from_last_anchor(kinds=_KINDS):
        if is_hidden(entry) or entry.id in retracted:
            continue
        role = "tool_call" if entry.kind == "tool_call" else payload_role(entry.kind, entry.payload) or entry.kind
        items.append(Item(entry.id, entry.id, role, payload_text(entry.kind, entry.payload)))
    return Phase(tuple(items))


class _TooLong(Exception):
    """A request that does not fit the model's window (known ahead, or reported by the endpoint)."""

    def __str__(self) -> str:
        return "the summarizing request did not fit the model's context window"


@dataclass
class _Run:
    """One summary in the making: the model, its window, and every request made so far."""

    model: Model
    requests: list[dict[str, Any]]
    usage: Usage | None = None
    removed: int = 0

    def budget(self) -> int | None:
        """The request's budget in offline-estimate tokens (the model's server may count more of them)."""
        window = context_window_of(self.model)
        # The answer needs room too: keep a quarter of the window for it.
        return None if window is None else max(1, int((window - max(window // 4, 32)) / scale_of(self.model).ratio))

    async def ask(self, items: list[Item], kind: str) -> str:
        messages = [
            {"role": "system", "content": SUMMARY_INSTRUCTIONS},
            {"role": "user", "content": request_text(items)},
        ]
        budget = self.budget()
        if budget is not None and count_messages_tokens(messages) > budget:
            raise _TooLong
        try:
            completion: Completion = await self.model.complete(messages)
        except ContextLengthError:
            raise _TooLong from None
        usage = completion.usage
        self.usage = Usage.add(self.usage, usage)
        self.requests.append(
            {
                "kind": kind,
                "range": [items[0].first, items[-1].last],
                "items": len(items),
                "usage": usage.as_dict() if usage else None,
            }
        )
        return completion.text

    async def summarize(self, items: list[Item], kind: str = "phase", depth: int = 0) -> tuple[str, int]:
        """The reply for ``items`` and how many parts it took; parts when they do not fit at once."""
        try:
            return await self.ask(items, kind), 1
        except _TooLong:
            if depth >= _MAX_DEPTH:
                raise BubNbError(
                    f"The summary of {len(items)} items did not fit {self.model.name!r} after {depth} rounds of parts"
                ) from None
        if len(items) == 1:
            return await self.ask([clipped(items[0], self.budget())], kind), 1
        parts = []
        for group in self.groups(items):
            reply, _ = await self.summarize(group, "part", depth + 1)
            summary, steps = split_reply(reply)
            text = f"{summary}\nNext steps: {steps}" if steps else summary
            checked = check_citations(text, group[0].first, group[-1].last)
            self.removed += checked.removed
            parts.append(Item(group[0].first, group[-1].last, "part", checked.text))
        text, _ = await self.summarize(parts, "combine", depth + 1)
        return text, len(parts)

    def groups(self, items: list[Item]) -> list[list[Item]]:
        """Consecutive runs of ``items`` that each fit the window (halves when the window is unknown)."""
        budget = self.budget()
        if budget is None:
            middle = len(items) // 2
            return [items[:middle], items[middle:]]
        room = budget - count_text_tokens(SUMMARY_INSTRUCTIONS) - 16
        groups: list[list[Item]] = [[]]
        used = 0
        for item in items:
            size = count_text_tokens(item.line()) + 2
            if groups[-1] and used + size > room:
                groups.append([])
                used = 0
            groups[-1].append(item)
            used += size
        if len(groups) == 1:  # the estimate fitted yet the model refused: split anyway, so it ends
            middle = len(items) // 2
            return [items[:middle], items[middle:]]
        return groups


async def summarize_phase(model: Model, phase: Phase) -> Summary:
    """The model's summary of ``phase``, its citations checked against the phase's range.

    Raises :class:`~bub_nb.errors.BubNbError` (a ``ModelError`` from the endpoint) when no summary
    could be had; nothing is written here either way.
    """
    if not phase.items:
        raise BubNbError("There is nothing to summarize: the phase holds no entries")
    run = _Run(model, [])
    try:
        text, parts = await run.summarize(list(phase.items))
    except _TooLong:
        raise BubNbError(
            f"The summarizing request does not fit the context window of {model.name!r}, even with "
            "one entry cut short; nothing was written: use a larger window"
        ) from None
    summary, next_steps = split_reply(text)
    if not summary:
        raise BubNbError(f"Model {model.name!r} answered the summarizing request with no summary")
    # A carried claim cites where it was said, not the anchor it came through.
    summary, next_steps = (to_sources(part, phase.items) for part in (summary, next_steps))
    said = {item.first: item.text for item in phase.items if item.first == item.last}
    quoted = getattr(model, "quotes_summaries", False) is True  # the offline model's, extractive by construction
    supported = [supported_citations(part, {} if quoted else said) for part in (summary, next_steps)]
    summary, next_steps = (part.text for part in supported)
    checked = _checked(summary, next_steps, phase, model.name, run.removed, parts, run.requests, run.usage)
    checked = replace(checked, unsupported_citations=sum(len(part.dropped) for part in supported))
    # A summary whose only citations are the other tapes' entries its carried lines name cites something too.
    if not checked.sources and not find_references(f"{checked.summary}\n{checked.next_steps}"):
        raise BubNbError(
            f"Model {model.name!r} answered the summarizing request with a summary that cites no entry of "
            f"#{phase.range[0]}-#{phase.range[1]} ({shorten(summary, 60, placeholder=' …')!r}); nothing was written"
        )
    return checked


def extractive_phase_summary(phase: Phase, error: str | None = None) -> Summary:
    """The summary quoted from the tape, for when the model's summary failed (``error`` says why)."""
    summary, next_steps = extractive_summary(list(phase.items))
    return _checked(summary, next_steps, phase, FALLBACK, 0, 1, [], None, error)


def _checked(
    summary: str,
    next_steps: str,
    phase: Phase,
    model: str,
    removed: int,
    parts: int,
    requests: list[dict[str, Any]],
    usage: Usage | None,
    error: str | None = None,
) -> Summary:
    first, last = phase.range
    carried = carried_sources(phase.items)  # the lines carried over keep citing where they came from
    seen = frozenset(i for item in phase.items for i in range(item.first, item.last + 1)) | carried
    (summary, next_steps), unseen = without_unseen_citations((summary, next_steps), seen)
    (summary, next_steps), unknown = without_unknown_references((summary, next_steps), carried_references(phase.items))
    removed += unseen + unknown
    checked_summary = check_citations(summary, first, last, carried)
    checked_steps = check_citations(next_steps, first, last, carried)
    return Summary(
        checked_summary.text,
        checked_steps.text,
        tuple(sorted({*checked_summary.sources, *checked_steps.sources})),
        (first, last),
        model,
        (*checked_summary.uncited, *checked_steps.uncited),
        removed + checked_summary.removed + checked_steps.removed,
        parts,
        tuple(requests),
        usage,
        error,
    )


def fitted(summary: Summary, room: int | None, state: Callable[[Summary], dict[str, Any]] = Summary.state) -> Summary:
    """``summary`` cut to its newest lines until its ``state`` is at most ``room`` tokens (as JSON), so a retry
    that carries it still fits the window; ``Decided:`` lines go last, and the summary is left out entirely when
    even one line does not fit."""
    if room is None:
        return summary
    lines = summary.summary.splitlines()
    steps = summary.next_steps
    while count_text_tokens(json.dumps(state(summary), ensure_ascii=False)) > room:
        if steps:
            steps = ""
        elif lines:
            # The oldest go first (the retry needs the latest most), decisions after every other line.
            plain = next((index for index, line in enumerate(lines) if "Decided:" not in line), 0)
            lines = lines[:plain] + lines[plain + 1 :]
        else:
            break
        first, last = summary.range
        kept = frozenset(summary.sources)  # what was checked already, carried lines' older citations among them
        checked = check_citations("\n".join(lines), first, last, kept)
        checked_steps = check_citations(steps, first, last, kept)
        summary = replace(
            summary,
            summary=checked.text,
            next_steps=checked_steps.text,
            sources=tuple(sorted({*checked.sources, *checked_steps.sources})),
            uncited=(*checked.uncited, *checked_steps.uncited),
        )
    return summary
