"""Where a carried claim came from: a citation of the anchor a line came through, re-pointed at the line's sources.

A phase opens at an anchor whose summary the model is shown as one labelled line (``[#40] anchor: phase/2
{...}``), so a model that repeats a carried line may cite that anchor for it. The anchor only passed the claim on:
its summary's line cites where the claim was said, on this tape (``[#12]``) or on another one
(``[tape://<tape>/entry/12]``: a fork's parent, another agent's tape). Such a citation is replaced by the
citations of the carried line that holds the claim (half its key words at least, and its numbers and paths, as
:func:`~bub_nb.agent.summaries.support.supports` reads them), so a fact keeps naming its source through any
number of handoffs. A citation of the anchor for what no carried line holds (the anchor's own state) stays.
"""

from __future__ import annotations

from collections.abc import Sequence

from bub_nb.agent.summaries.extractive import Item, carried_lines
from bub_nb.agent.summaries.support import Said, claims, supports
from bub_nb.context.artifacts import content_words
from bub_nb.tape.citations import CITATION, REFERENCE, find_citations, find_references, format_citation


def _cited(line: str) -> str:
    """The citations of ``line``, as they are written, this tape's first."""
    local = [format_citation(c.first, c.last) for c in find_citations(line)]
    return " ".join([*dict.fromkeys(local), *(f"[{address}]" for address in find_references(line))])


def to_sources(text: str, items: Sequence[Item]) -> str:
    """``text`` with each citation of the phase's opening anchor, for a claim a line it carried holds, replaced by
    that line's citations."""
    anchor = next((item for item in items if item.role == "anchor"), None)
    if anchor is None or f"[#{anchor.first}" not in text:
        return text
    lines = [(Said.of(REFERENCE.sub(" ", CITATION.sub(" ", line))), _cited(line)) for line in carried_lines(anchor)]
    pieces: list[str] = []
    position = 0
    for citation, claim in claims(text):
        if (citation.first, citation.last) != (anchor.first, anchor.last):
            continue
        key = content_words(claim)
        holding = [line for line in lines if key and supports(claim, [line[0]])]
        if not holding:  # the anchor's own state, or a claim no carried line holds: the support check decides
            continue
        best = max(holding, key=lambda line: len(key & line[0].words))
        pieces += [text[position : citation.start], best[1]]
        position = citation.end
    return "".join([*pieces, text[position:]])
