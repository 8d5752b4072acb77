"""Whether a summary's citations support its claims: a citation stays only where the entry it cites says the claim.

A model can cite an entry of the phase for a sentence that entry never said: the id is valid, the claim is not
its. The claim a citation stands for is the text before it, back to the previous citation or the start of its
sentence (``It was decided. [#12]`` cites for the sentence before it). The citation is supported when the cited
entries hold the claim's key words and its exact figures:

- its key words are its content words (:func:`~bub_nb.context.artifacts.content_words`: lowercased tokens, stop
  words left out, no stemming), and the cited entries must hold at least half of them (one at least);
- its numbers and paths (:func:`~bub_nb.context.artifacts.located`) must each be in the cited entries as they are
  in the claim, by the key the retention report compares them by or as written: "400 euros" is not supported by an
  entry that says 500, nor ``src/app.py`` by one that names ``src/api.py``, however many words they share.

An unsupported citation is taken out and counted. A citation of entries whose text is not at hand (what lines
carried over from an earlier phase cite) is left as it is: there is nothing to check it against.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Final

from bub_nb.context.artifacts import content_words, located, stands_in
from bub_nb.tape.citations import RUN_LIMIT, Citation, find_citations

SUPPORT_SHARE: Final = 0.5
"""The share of a claim's key words the cited entries must hold for the citation to stay."""

EXACT_KINDS: Final = ("number", "path")
"""The artifacts of a claim that must be in the cited entries exactly, not just share words with them."""

_SENTENCE_END: Final = re.compile(r"(?<=[.!?])\s+|\n")
_LIST_MARK: Final = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s+")  # "1) " numbers a list, it claims no figure


@dataclass(frozen=True, slots=True)
class Supported:
    """A text with its unsupported citations taken out, and those citations as ``(cited, claim)`` pairs."""

    text: str
    dropped: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class Said:
    """What one entry says, as a claim is checked against it: its text, content words and exact artifacts."""

    text: str
    words: frozenset[str]
    exact: frozenset[tuple[str, str]]

    @classmethod
    def of(cls, text: str) -> Said:
        exact = frozenset((a.kind, a.key) for _, a in located(text) if a.kind in EXACT_KINDS)
        return cls(text, content_words(text), exact)


def supports(claim: str, said: list[Said]) -> bool:
    """Whether the entries ``said`` hold ``claim``: half its key words at least, and every number and path."""
    key = content_words(claim)
    words = frozenset().union(*(entry.words for entry in said))
    if len(key & words) < max(1, SUPPORT_SHARE * len(key)):
        return False
    exact = frozenset().union(*(entry.exact for entry in said))
    return all(
        (artifact.kind, artifact.key) in exact or any(stands_in(artifact.text, entry.text) for entry in said)
        for _, artifact in located(claim)
        if artifact.kind in EXACT_KINDS
    )


def claims(text: str) -> Iterator[tuple[Citation, str]]:
    """Each citation of ``text`` with the claim it stands for: the text before it, back to the previous citation
    or the start of its sentence (a list's mark left out)."""
    previous_end = 0
    claim = ""
    for citation in find_citations(text):
        segment = text[previous_end : citation.start]
        pieces = [piece for piece in _SENTENCE_END.split(segment) if any(char.isalnum() for char in piece)]
        if pieces or "\n" in segment:
            claim = _LIST_MARK.sub("", pieces[-1]).strip() if pieces else ""
        previous_end = citation.end
        yield citation, claim


def supported_citations(text: str, entries: Mapping[int, str]) -> Supported:
    """``text`` without the citations whose cited ``entries`` (id to text) do not hold the claim (:func:`supports`)."""
    said: dict[int, Said] = {}
    kept: list[str] = []
    dropped: list[tuple[str, str]] = []
    position = 0
    for citation, claim in claims(text):
        last = min(citation.last, citation.first + RUN_LIMIT - 1)
        named = [i for i in range(citation.first, last + 1) if i in entries]
        if not named or not content_words(claim):  # nothing at hand to check it against, or a claim of no content
            continue
        for entry_id in named:
            if entry_id not in said:
                said[entry_id] = Said.of(entries[entry_id])
        if supports(claim, [said[i] for i in named]):
            continue
        kept.append(text[position : citation.start].rstrip(" "))
        position = citation.end
        dropped.append((text[citation.start : citation.end], claim))
    kept.append(text[position:])
    return Supported("".join(kept), tuple(dropped))
