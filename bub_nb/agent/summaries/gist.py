"""The extractive summary of a phase's entries: its decisions, its artifacts and its words, fitted to a token budget.

Each artifact of the phase (a number with its unit, a file path, a URL, an identifier, a command: see
:mod:`bub_nb.context.artifacts`) is noted once, on the line of the entry it first appears in, and each decision
(:mod:`.decisions`) gets a ``Decided:`` line. The text may take :data:`SHARE` of the phase's tokens (never less
than :data:`FLOOR`), so that with its bookkeeping a summary stays under a fifth of the phase. When it does not
fit, what goes first is the count of tool calls, then identifiers, commands and URLs (oldest first), then what
the earlier anchor carried but its decisions, then all but the newest few decisions of the phase, then the
carried decisions, then numbers and paths (oldest first), and the newest decisions last. When room is left, the
user's messages are quoted whole instead of noted, newest first, and then the last answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

from bub_nb.agent.summaries.decisions import Decision, Said, decisions
from bub_nb.agent.summaries.salience import line_weight, weigh, within
from bub_nb.agent.summaries.salience import notes as salient_notes
from bub_nb.context.artifacts import Artifact, located
from bub_nb.context.tokens import count_text_tokens
from bub_nb.tape.citations import CITATION, cited_ids, format_citation

SHARE: Final = 0.17
"""The share of the phase's tokens the summary's text may take."""
FLOOR: Final = 160
"""The fewest tokens a summary's text may take, however short the phase."""
QUOTE_LIMIT: Final = 160
"""The longest message quoted whole (in characters, on one line)."""
KEPT_DECISIONS: Final = 3
"""How many of the newest decisions go only after every number and path."""

_LABELS: Final = {"user": "Noted", "assistant": "Answered", "tool": "Tool returned", "tool_call": "Called"}
_NOTED: Final = (*_LABELS, "error")
_NOTE: Final = re.compile(r"^\[[^\]#][^\]]*\]\s*(?:-\s*)?")  # a leading "[offline teaching model; ...]" label
_BARE: Final = re.compile(r"[-+]?[\d,]+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_AFTER: Final = re.compile(r"[ \t]+([A-Za-z][A-Za-z-]{1,20})\b")
_BEFORE: Final = re.compile(r"\b([A-Za-z][A-Za-z-]{1,20})[ \t]+$")
_PLAIN: Final = frozenset(
    ["the", "a", "an", "and", "or", "of", "to", "in", "on", "at", "for", "with", "is", "are", "was", "be", "it"]
)
_CHEAP_FIRST: Final = ("identifier", "command", "url")
_KEPT_KINDS: Final = ("number", "path")
_TURN_PIECES: Final = 8


def quote(text: str, limit: int = QUOTE_LIMIT) -> str:
    """``text`` on one line, shortened to ``limit``, without citations of its own (only ours may cite)."""
    flat = _NOTE.sub("", " ".join(CITATION.sub("", text).split()))
    flat = flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"
    return flat.replace("“", '"').replace("”", '"')


def _written(artifact: Artifact, at: int, text: str) -> str:
    """How a note writes ``artifact``: a number with no unit takes the word that tells what it counts."""
    if artifact.kind != "number" or not _BARE.fullmatch(artifact.text):
        return artifact.text
    end = at + len(artifact.text)
    if (after := _AFTER.match(text, end)) and after.group(1).lower() not in _PLAIN:
        return f"{artifact.text} {after.group(1)}"
    if (before := _BEFORE.search(text, max(0, at - 24), at)) and before.group(1).lower() not in _PLAIN:
        return f"{before.group(1)} {artifact.text}"
    return artifact.text


@dataclass(slots=True)
class _Found:
    """An artifact as a note writes it, and whether it is still in."""

    kind: str
    written: str
    kept: bool = True


@dataclass
class _Piece:
    """What one entry adds to its turn's line: the artifacts it brought (each as written), or its words."""

    item: Said
    found: list[_Found]
    words: str | None  # the message quoted whole, when it is short enough
    quoted: bool = False

    def text(self) -> str:
        cite = format_citation(self.item.first, self.item.last)
        if self.quoted:
            return f"“{self.words}” {cite}"
        written = [found.written for found in self.found if found.kept]
        return f"{'; '.join(written)} {cite}" if written else ""


@dataclass
class _Note:
    """One turn's line: a user's message and what answered it, or a run of entries no user message opened."""

    label: str
    pieces: list[_Piece]

    @property
    def first(self) -> int:
        return self.pieces[0].item.first

    def text(self) -> str:
        said = [text for piece in self.pieces if (text := piece.text())]
        return f"{self.label}: {'; '.join(said)}." if said else ""


def _decided(decision: Decision) -> str:
    cites = " ".join(format_citation(i) for i in decision.cites)
    how = {"accepted": " (proposed, then accepted)", "confirmed": " (a tool confirmed it)"}.get(decision.how, "")
    return f"Decided: {quote(decision.text).rstrip('.')}{how} {cites}."


@dataclass
class _Draft:
    """The lines in the making, with the tokens they take."""

    budget: int
    notes: list[_Note]
    decided: list[tuple[int, str]]  # (entry, line)
    carried: list[tuple[int, str]]
    tools: str
    last_answer: str = ""
    salient: list[tuple[int, str]] = field(default_factory=list)  # (entry, line)

    def tokens(self) -> int:
        lines = [*(n.text() for n in self.notes), *(t for _, t in (*self.decided, *self.carried)), self.tools]
        return sum(_cost(line) for line in (*lines, *(t for _, t in self.salient), self.last_answer))

    def lines(self) -> list[str]:
        timeline: list[tuple[int, int, str]] = [(n.first, 0, n.text()) for n in self.notes]
        timeline += [(entry, 1, line) for entry, line in self.decided]
        timeline += [(entry, 2, line) for entry, line in self.salient]
        ordered = [line for _, _, line in sorted(timeline) if line]
        return [line for line in (*ordered, self.tools, self.last_answer, *(t for _, t in self.carried)) if line]


def _cost(line: str) -> int:
    return count_text_tokens(line) + 2 if line else 0


def _drop(draft: _Draft) -> None:
    """Take out the least needed pieces, in the order the module says, until the draft fits its budget.

    Each step keeps a running estimate of what is left, so a phase with many artifacts costs one pass per step.
    """
    total, budget = draft.tokens(), draft.budget
    for _ in range(3):  # the estimate is close; a second round takes what it missed
        if total <= budget:
            return
        total -= _cost(draft.tools)
        draft.tools = ""
        for kind in _CHEAP_FIRST:
            total = _drop_found(draft, (kind,), total)
        total = _drop_lines(draft.carried, lambda line: "Decided:" not in line, total, budget)
        total = _drop_lines(draft.decided, lambda line: True, total, budget, keep=KEPT_DECISIONS)
        total = _drop_lines(draft.carried, lambda line: True, total, budget)
        total = _drop_found(draft, _KEPT_KINDS, total)
        total = _drop_lines(draft.decided, lambda line: True, total, budget)
        total = draft.tokens()


def _drop_lines(
    lines: list[tuple[int, str]], wanted: Callable[[str], bool], total: int, budget: int, keep: int = 0
) -> int:
    """Drop the oldest ``lines`` that are ``wanted`` (all but the newest ``keep`` of them) while over ``budget``."""
    candidates = [index for index, (_, line) in enumerate(lines) if wanted(line)]
    dropped = set()
    for index in candidates[: max(0, len(candidates) - keep)]:
        if total <= budget:
            break
        dropped.add(index)
        total -= _cost(lines[index][1])
    lines[:] = [line for index, line in enumerate(lines) if index not in dropped]
    return total


def _drop_found(draft: _Draft, kinds: tuple[str, ...], total: int) -> int:
    """Drop the artifacts of ``kinds``, oldest first, while over budget."""
    for note in draft.notes:
        for piece in note.pieces:
            for found in piece.found:
                if total <= draft.budget:
                    return total
                if found.kept and found.kind in kinds:
                    found.kept = False
                    total -= count_text_tokens(found.written) + 1
                    if not piece.text():
                        total -= count_text_tokens(format_citation(piece.item.first, piece.item.last)) + 1
    return total


def _note_more(draft: _Draft, items: Sequence[Said], carried: Sequence[str], answer: str) -> None:
    """With the room left, note what the phase established (:mod:`.salience`: both speakers' names, numbers,
    dates, decisions, plans and first mentions, heaviest first, no near-duplicates), then the last answer."""
    room = draft.budget - draft.tokens()
    decided = {entry for _, line in draft.decided for entry in cited_ids(line)}  # said there already
    found = [note for note in salient_notes(items, carried) if note.entry not in decided]
    for note in within(found, room):
        draft.salient.append((note.entry, note.line))
    said = answer.partition("“")[2].rpartition("”")[0]
    if answer and weigh(said, set()) > 0 and draft.tokens() + _cost(answer) <= draft.budget:
        draft.last_answer = answer  # unless it is only a pleasantry


def gist(items: Sequence[Said], carried: Sequence[str] = (), reserved: int = 0) -> list[str]:
    """The summary's lines (without list marks) for the entries ``items``; ``carried`` are the lines the earlier
    anchor carried, and ``reserved`` the tokens the next steps take of the budget."""
    size = sum(count_text_tokens(item.text) + 4 for item in items)
    budget = max(FLOOR, int(SHARE * size)) - reserved
    seen: set[tuple[str, str]] = set()
    notes: list[_Note] = []
    users = [item for item in items if item.role == "user" and item.text.strip()]
    for item in items:
        if item.role not in _NOTED or not item.text.strip():
            continue
        found = []
        for at, artifact in located(item.text):
            if artifact.kind != "decision" and (artifact.kind, artifact.key) not in seen:
                seen.add((artifact.kind, artifact.key))
                found.append(_Found(artifact.kind, _written(artifact, at, item.text)))
        words = quote(item.text, 10**6) if item.role in ("user", "error") else ""
        piece = _Piece(item, found, words if words and len(words) <= QUOTE_LIMIT else None)
        if item.role == "user" or not notes or len(notes[-1].pieces) >= _TURN_PIECES:
            label = "Asked" if users and item is users[0] else _LABELS.get(item.role, "Error")
            notes.append(_Note(label, [piece]))
        else:
            notes[-1].pieces.append(piece)
    calls = [item for item in items if item.role == "tool_call"]
    run = format_citation(calls[0].first, calls[-1].last) if calls else ""
    tools = f"Tools were called {len(calls)} time(s) {run}." if calls else ""
    decided = [(decision.cites[0], _decided(decision)) for decision in decisions(items)]
    # What was carried takes at most half the budget (its newest lines), so the phase's own facts always get in.
    # The heaviest of them (salience, and each artifact a line holds), the newest first among equals.
    room, kept_carried = budget // 2, set()
    for index in sorted(range(len(carried)), key=lambda i: (-line_weight(carried[i]), -i)):
        if _cost(carried[index]) <= room:
            room -= _cost(carried[index])
            kept_carried.add(index)
    carried = [line for index, line in enumerate(carried) if index in kept_carried]
    draft = _Draft(budget, notes, decided, [(0, line) for line in carried], tools)
    answers = [item for item in items if item.role == "assistant" and item.text.strip()]
    answer = f"Last answer: “{quote(answers[-1].text, 140)}” {format_citation(answers[-1].first)}." if answers else ""
    if draft.tokens() > budget:
        _drop(draft)
    else:
        _note_more(draft, items, carried, answer)
    return draft.lines()
