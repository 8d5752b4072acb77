"""Whether a summary's citations support its claims: a citation stays only where the entry it cites says the claim.

A model can cite an entry of the phase for a sentence that entry never said: the id is valid, the claim is not
its. The claim a citation stands for is the text before it, back to the previous citation or the start of its
sentence (``It was decided. [#12]`` cites for the sentence before it). Its key words are its content words
(:func:`~bub_nb.context.artifacts.content_words`: lowercased, stop words left out); the citation is supported when
the cited entries hold at least half of them (one at least). An unsupported citation is taken out and counted.
A citation of entries whose text is not at hand (what lines carried over from an earlier phase cite) is left as
it is: there is nothing to check it against.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from bub_nb.context.artifacts import content_words
from bub_nb.tape.citations import RUN_LIMIT, find_citations

SUPPORT_SHARE: Final = 0.5
"""The share of a claim's key words the cited entries must hold for the citation to stay."""

_SENTENCE_END: Final = re.compile(r"(?<=[.!?])\s+|\n")


@dataclass(frozen=True, slots=True)
class Supported:
    """A text with its unsupported citations taken out, and those citations as ``(cited, claim)`` pairs."""

    text: str
    dropped: tuple[tuple[str, str], ...]


def supported_citations(text: str, entries: Mapping[int, str]) -> Supported:
    """``text`` without the citations whose cited ``entries`` (id to text) do not hold the claim's key words."""
    words = {entry_id: content_words(body) for entry_id, body in entries.items()}
    kept: list[str] = []
    dropped: list[tuple[str, str]] = []
    position = previous_end = 0
    claim = ""
    for citation in find_citations(text):
        segment = text[previous_end : citation.start]
        pieces = [piece for piece in _SENTENCE_END.split(segment) if any(char.isalnum() for char in piece)]
        if pieces or "\n" in segment:
            claim = pieces[-1].strip() if pieces else ""
        previous_end = citation.end
        named = range(citation.first, min(citation.last, citation.first + RUN_LIMIT - 1) + 1)
        known = [words[i] for i in named if i in words]
        key = content_words(claim)
        if not known or not key:  # nothing at hand to check it against, or a claim of no content words
            continue
        said = frozenset().union(*known)
        if len(key & said) >= max(1, SUPPORT_SHARE * len(key)):
            continue
        kept.append(text[position : citation.start].rstrip(" "))
        position = citation.end
        dropped.append((text[citation.start : citation.end], claim))
    kept.append(text[position:])
    return Supported("".join(kept), tuple(dropped))
