"""The summarizing request's wording, and the extractive summary: the offline model's, and everyone's fallback.

A summarizing request sends the phase's entries one per line, each labelled with its id
(``[#12] user: ...``), or, when a phase is summarized in parts, each part's summary labelled with
its run of ids (``[#4-#40] part: ...``). The reply has a summary and, after a ``Next steps:``
line, the next steps. The extractive summary quotes what the user asked, what was decided and
the last answer, each with the citation of the entry it comes from, so every citation is valid.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from bub_nb.agent.summaries.gist import gist, quote
from bub_nb.agent.summaries.salience import line_weight
from bub_nb.context.tokens import count_text_tokens
from bub_nb.tape.citations import (
    CITATION,
    REFERENCE,
    cited_ids,
    cites_something,
    find_references,
    format_citation,
    sentences,
)
from bub_nb.tape.events import CONTEXT_HANDOFF

_LIST_MARK: Final = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s+")

SUMMARY_INSTRUCTIONS: Final = (
    "Summarize the phase of a conversation tape given below, for whoever continues the work.\n"
    "Each line starts with the id of the entry it comes from, like [#12]. Cite the entries every sentence "
    "stands on as [#12] or [#12-#15], using only ids that appear below.\n"
    "Keep what the phase established, from every speaker: names, numbers, dates, decisions, plans, first "
    "mentions and changes of state; leave out pleasantries and repetition.\n"
    "Answer in Markdown, briefly, in two sections: a line 'Summary:' then the summary (what was asked, "
    "what was decided, the last answer), and a line 'Next steps:' then the next steps (may be empty)."
)
"""The system message of every summarizing request; its first line tells such a request apart."""

_ITEM: Final = re.compile(r"^\[#(\d+)(?:-#(\d+))?\] ([a-z_]+): ?(.*)$")
_NEXT_STEPS: Final = re.compile(r"^[#*\s]*next\s+steps\s*\**\s*:\s*\**\s*", re.IGNORECASE | re.MULTILINE)
_SUMMARY_HEAD: Final = re.compile(r"^[#*\s]*summary\s*\**\s*:\s*\**\s*", re.IGNORECASE)
_NEXT: Final = re.compile(r"\b(next|todo|to do|then|remaining|follow[- ]up)\b", re.I)
_QUOTE_LIMIT: Final = 140
_PART_LINES: Final = 12


@dataclass(frozen=True, slots=True)
class Item:
    """One labelled line of a summarizing request: an entry (``first == last``) or a part's run of entries."""

    first: int
    last: int
    role: str
    text: str

    def line(self) -> str:
        # Continuation lines are indented, so only a label ever starts a line.
        body = "\n  ".join(self.text.splitlines()) if self.text else ""
        return f"{format_citation(self.first, self.last)} {self.role}: {body}"


def clipped(item: Item, budget: int | None) -> Item:
    """One item too long for the window alone, cut to what fits (the tape keeps all of it)."""
    room = (budget or 400) - count_text_tokens(SUMMARY_INSTRUCTIONS) - 24
    limit = max(40, room * 3)
    return item if len(item.text) <= limit else Item(item.first, item.last, item.role, item.text[:limit] + " …")


def is_summary_request(messages: list[dict[str, object]]) -> bool:
    """Whether ``messages`` are a summarizing request (their system message is :data:`SUMMARY_INSTRUCTIONS`)."""
    first = messages[0].get("content") if messages else None
    return isinstance(first, str) and first.startswith(SUMMARY_INSTRUCTIONS.splitlines()[0])


def request_text(items: list[Item]) -> str:
    """The user message of a summarizing request: one labelled line per item."""
    return "\n".join(item.line() for item in items)


def parse_items(text: str) -> list[Item]:
    """The items of a request's user message (continuation lines joined back)."""
    items: list[Item] = []
    for line in text.splitlines():
        match = _ITEM.match(line)
        if match:
            first = int(match.group(1))
            last = int(match.group(2)) if match.group(2) else first
            items.append(Item(first, last, match.group(3), match.group(4)))
        elif items and line.startswith("  "):
            last_item = items[-1]
            items[-1] = Item(last_item.first, last_item.last, last_item.role, f"{last_item.text}\n{line[2:]}")
    return items


def split_reply(text: str) -> tuple[str, str]:
    """A reply's summary and next steps (the text after a ``Next steps:`` line, else empty)."""
    found = _NEXT_STEPS.search(text)
    summary, next_steps = (text[: found.start()], text[found.end() :]) if found else (text, "")
    return _SUMMARY_HEAD.sub("", summary.strip(), count=1).strip(), next_steps.strip()


def reply_text(summary: str, next_steps: str) -> str:
    """A reply in the requested shape."""
    return f"Summary:\n{summary}\n\nNext steps:\n{next_steps}".rstrip()


def _cited(label: str, text: str, item: Item) -> str:
    return f"{label} “{quote(text, _QUOTE_LIMIT)}” {format_citation(item.first, item.last)}."


_CARRIED: Final = "Carried over:"
_CARRIED_LIMIT: Final = 12


def _carried_summary(text: str) -> str:
    """The summary an earlier anchor's state carried (its line reads ``name {state}``), or ``""``: a summarizing
    handoff's ``summary``, or the summary another agent handed over (its citations already ``tape://`` addresses
    of the sender's entries)."""
    _, _, state_text = text.partition(" ")
    try:
        state = json.loads(state_text) if state_text else None
    except ValueError:
        return ""
    summary = state.get("summary") if isinstance(state, dict) else None
    if summary is None and isinstance(state, dict) and isinstance(handed := state.get(CONTEXT_HANDOFF), dict):
        content = handed.get("content")
        summary = content.get("summary") if isinstance(content, dict) else None
    return summary if isinstance(summary, str) else ""


def carried_lines(anchor: Item) -> list[str]:
    """What the anchor a phase starts at carried, one line per line of its summary, each keeping the citations of
    the entries it came from (however many handoffs back), so the chain to the source is never lost.

    A new summary carries them whole, so facts survive handoff after handoff; a line that was itself carried
    keeps its one ``Carried over:`` label, never nested. A line that cited nothing cites the anchor.
    """
    lines = []
    cite = format_citation(anchor.first, anchor.last)
    for line in _carried_summary(anchor.text).splitlines():
        text = " ".join(_LIST_MARK.sub("", line).split())
        while text.startswith(_CARRIED):
            text = text[len(_CARRIED) :].strip()
        if not any(char.isalnum() for char in REFERENCE.sub("", CITATION.sub("", text))):
            continue
        # Only citations of entries before the anchor can be where a line came from; others go. An entry of
        # another tape (a fork's parent, another agent's) is cited by its address, which the line keeps.
        text = CITATION.sub(lambda found: found.group(0) if _before(found.group(0), anchor.first) else "", text)
        text = " ".join(text.split()).replace(" .", ".")
        text = text if cites_something(text) else f"{text.rstrip('.')} {cite}."
        lines.append(f"{_CARRIED} {text}")
    # The heaviest lines (what they hold: see salience.line_weight), newest first among equals, in their order.
    heaviest = sorted(range(len(lines)), key=lambda i: (-line_weight(lines[i]), -i))[:_CARRIED_LIMIT]
    return [lines[i] for i in sorted(heaviest)]


def _before(citation: str, first: int) -> bool:
    ids = cited_ids(citation)
    return bool(ids) and ids[0] > 0 and ids[-1] < first


def carried_sources(items: Sequence[Item]) -> frozenset[int]:
    """The entries the lines carried into a phase cite (before the phase: a summary may cite them again)."""
    return frozenset(
        entry_id
        for anchor in items
        if anchor.role == "anchor"
        for line in carried_lines(anchor)
        for entry_id in cited_ids(line)
    )


def carried_references(items: Sequence[Item]) -> frozenset[str]:
    """The ``tape://`` addresses the lines carried into a phase cite: entries of other tapes a summary may cite."""
    return frozenset(
        address
        for anchor in items
        if anchor.role == "anchor"
        for line in carried_lines(anchor)
        for address in find_references(line)
    )


def carried_into(summary: str, items: list[Item] | tuple[Item, ...]) -> str:
    """``summary`` with the lines the phase's anchor carried that it lacks, last (the first a tight window drops
    are a summary's oldest lines, so what was carried goes after the new)."""
    anchor = next((item for item in items if item.role == "anchor"), None)
    missing = [line for line in carried_lines(anchor) if line not in summary] if anchor is not None else []
    return "\n".join([summary.rstrip(), *(f"- {line}" for line in missing)]).strip() if missing else summary


def extractive_summary(items: list[Item]) -> tuple[str, str]:
    """Summary and next steps quoted from ``items``: deterministic, and every citation one of theirs.

    Parts are summarized by their lines (keeping their citations, or citing the part). Entries by
    :func:`~bub_nb.agent.summaries.gist.gist`: their decisions, their artifacts and their words within a
    token budget, and last what the earlier anchor carried.
    """
    if not items:
        return "", ""
    parts = [item for item in items if item.role == "part"]
    if parts:
        lines = []
        for part in parts:
            # Every line of a part's summary goes on (a fact dropped here is lost to every later phase).
            kept = [" ".join(_LIST_MARK.sub("", line).split()) for line in split_reply(part.text)[0].splitlines()]
            kept = [line for line in kept if any(char.isalnum() for char in line)][-_PART_LINES:] or ["(an empty part)"]
            for line in kept:
                cited = cites_something(line)
                lines.append(f"- {line}" if cited else f"- {line} {format_citation(part.first, part.last)}")
        last_steps = (split_reply(part.text)[1] for part in reversed(parts) if _NEXT_STEPS.search(part.text))
        return "\n".join(lines), next(last_steps, "")
    users = [item for item in items if item.role == "user" and item.text.strip()]
    steps = []
    if users:
        steps = [_cited("Asked next:", s, users[-1]) for s in sentences(users[-1].text) if _NEXT.search(s)][:2]
    next_steps = "\n".join(f"- {step}" for step in steps)
    # What the earlier anchor carried goes last, so a window too small for all of it drops the newest first.
    carried = [line for anchor in items if anchor.role == "anchor" for line in carried_lines(anchor)]
    lines = gist(items, carried, reserved=count_text_tokens(next_steps))
    if not lines:
        run = format_citation(items[0].first, items[-1].last)
        lines.append(f"This phase holds {len(items)} entries and no conversation {run}.")
    return "\n".join(f"- {line}" for line in lines), next_steps
