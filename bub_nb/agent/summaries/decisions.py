"""What a phase decided: the sentences that decide, proposals the user accepted, decisions a tool confirmed.

A decision sentence says so ("we decided", "we chose", "we will use", "let's", "switch to", ...); a question
and a sentence that only wonders ("if we decide") are none. An answer that quotes or echoes the user decides
nothing of its own, so long quoted spans are left out and a sentence the user already said is not counted
twice. A proposal of the assistant ("I suggest", "shall I", "we could") that the next user message accepts
("yes", "ok", "go ahead") is a decision citing both; a decision the assistant states and a tool result then
confirms (a result that is no error) cites that result too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from bub_nb.context.artifacts import QUOTED
from bub_nb.tape.citations import CITATION, sentences

DECIDED: Final = re.compile(
    r"\b(?:decid(?:e|ed|ing)\b|decision\b|agreed\b|chose\b|chosen\b|settled on\b|go(?:ing)? with\b|went with\b|"
    r"opted\b|will use\b|'ll use\b|we will\b|we'll\b|let's\b|switch(?:ed)? to\b|instead of\b)",
    re.IGNORECASE,
)
"""A sentence that says something was decided."""
PROPOSAL: Final = re.compile(
    r"\b(?:I (?:would |'d )?(?:suggest|propose|recommend)|shall I|should I|should we|we could|how about|"
    r"want me to|I can)\b",
    re.IGNORECASE,
)
ACCEPTED: Final = re.compile(
    r"^\W*(?:yes|yep|yeah|ok(?:ay)?|sure|sounds good|agreed|go ahead|do it|do that|please do|let's do|lgtm|"
    r"perfect|great|fine)\b",
    re.IGNORECASE,
)
_WONDERING: Final = re.compile(r"\b(?:if|whether|not yet|undecided|(?:have not|haven't|not) decided)\b", re.I)
_CLAUSE: Final = re.compile(r"(?<=[;:])\s+|(?<=,)\s+(?=(?:then|so|and)\b)")
_TALK: Final = ("user", "assistant", "tool", "tool_call")
DECISION_LIMIT: Final = 160
"""The longest decision quoted whole; a longer sentence is cut to the clause that decides."""


class Said(Protocol):
    """What a decision is read from: an entry's id (or run of ids), its role and its text."""

    @property
    def first(self) -> int: ...
    @property
    def last(self) -> int: ...
    @property
    def role(self) -> str: ...
    @property
    def text(self) -> str: ...


@dataclass(frozen=True, slots=True)
class Decision:
    """A decision: the words that decide, the entries it stands on (where it was said first), and how it was
    made: ``said``, ``accepted`` (a proposal the user accepted) or ``confirmed`` (a tool result confirmed it)."""

    text: str
    cites: tuple[int, ...]
    how: str = "said"


def _clause(sentence: str, marker: re.Pattern[str]) -> str:
    """``sentence``, or when it is long, the clause of it that ``marker`` finds."""
    sentence = " ".join(CITATION.sub("", sentence).split())
    if len(sentence) <= DECISION_LIMIT:
        return sentence
    for clause in _CLAUSE.split(sentence):
        if marker.search(clause):
            return clause if len(clause) <= DECISION_LIMIT else clause[: DECISION_LIMIT - 1].rstrip() + "…"
    return sentence[: DECISION_LIMIT - 1].rstrip() + "…"


def _words(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.casefold()))


def _is_error(text: str) -> bool:
    return text.lstrip().startswith('{"kind"') or text.lstrip().lower().startswith(("error", "traceback"))


def decisions(items: Sequence[Said]) -> list[Decision]:
    """The decisions of ``items`` in the order they were made, each once."""
    found: list[Decision] = []
    said: list[str] = []  # every user sentence so far, as words: an answer repeating one decides nothing
    seen: set[str] = set()
    for index, item in enumerate(items):
        if item.role not in _TALK or not item.text.strip():
            continue
        text = QUOTED.sub(" ", item.text) if item.role != "user" else item.text
        for sentence in sentences(text):
            words = _words(sentence)
            if item.role == "user":
                said.append(words)
            if not words or words in seen:
                continue
            if item.role != "user" and any(words in other for other in said):
                continue
            nxt = _next_said(items, index)
            if DECIDED.search(sentence) and not sentence.rstrip().endswith("?") and not _WONDERING.search(sentence):
                seen.add(words)
                confirmed = _confirmation(items, index) if item.role in ("assistant", "tool_call") else None
                cites = (item.first,) if confirmed is None else (item.first, confirmed)
                found.append(Decision(_clause(sentence, DECIDED), cites, "said" if confirmed is None else "confirmed"))
            elif item.role == "assistant" and PROPOSAL.search(sentence) and nxt and ACCEPTED.match(nxt.text):
                seen.add(words)
                found.append(Decision(_clause(sentence, PROPOSAL), (item.first, nxt.first), "accepted"))
    return found


def _next_said(items: Sequence[Said], index: int) -> Said | None:
    """The next user message after ``items[index]``."""
    return next((item for item in items[index + 1 :] if item.role == "user"), None)


def _confirmation(items: Sequence[Said], index: int) -> int | None:
    """The id of a tool result (no error) that follows ``items[index]`` before the user speaks again."""
    for item in items[index + 1 :]:
        if item.role == "user":
            return None
        if item.role == "tool" and item.text.strip() and not _is_error(item.text):
            return item.first
    return None
