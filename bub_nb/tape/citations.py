"""Citations of tape entries in text: ``[#12]`` for one entry, ``[#12-#15]`` for a run of them.

A summary that cites the entries it stands on can be checked against the tape. This module finds
citations, keeps those that fall inside a range of ids, says which sentences cite nothing, and reads
what a summarizing handoff's anchor state cites (defensively: a plain or hand-written state is no error).

An entry of another tape is cited by its address in brackets, ``[tape://<tape>/entry/<id>]``: what a line carried
from a fork's parent, from another agent's tape or from the tape a copy was made of cites, handoff after handoff.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Final

from bub_nb.errors import CitationError

CITATION: Final = re.compile(r"\[#(\d{1,19})(?:\s*[-\u2013]\s*#?(\d{1,19}))?\]")
"""``[#12]`` or ``[#12-#15]`` (an en dash and a missing second ``#`` are read too)."""

_LIST_MARK: Final = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s+")

REFERENCE: Final = re.compile(r"\[(tape://[^\s\[\]]+?/entry/\d{1,19})\]")
"""``[tape://<tape>/entry/<id>]``: a citation of an entry of another tape (a name without spaces or brackets)."""


@dataclass(frozen=True, slots=True)
class Citation:
    """One citation in a text: the ids it names (``first`` to ``last``) and where it stands (``start:end``)."""

    first: int
    last: int
    start: int
    end: int

    @property
    def ids(self) -> range:
        return range(self.first, self.last + 1)

    def within(self, first: int, last: int) -> bool:
        """Whether every id this citation names lies in ``first..last``."""
        return first <= self.first <= self.last <= last


@dataclass(frozen=True, slots=True)
class CheckedText:
    """A text with its invalid citations removed: the ids it still cites, how many were removed, and the
    sentences that cite nothing."""

    text: str
    sources: tuple[int, ...]
    removed: int
    uncited: tuple[str, ...]


def format_citation(first: int, last: int | None = None) -> str:
    """``[#first]``, or ``[#first-#last]`` for a run of entries."""
    return f"[#{first}]" if last is None or last == first else f"[#{first}-#{last}]"


def find_citations(text: str) -> list[Citation]:
    """Every citation in ``text``, in order."""
    found = []
    for match in CITATION.finditer(text):
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) else first
        found.append(Citation(first, last, match.start(), match.end()))
    return found


RUN_LIMIT: Final = 100_000
"""The most ids one citation is read as naming when no bound is given: ``[#1-#99999999999]`` never
allocates per id it claims."""


def find_references(text: str) -> list[str]:
    """The ``tape://`` addresses ``text`` cites in brackets (:data:`REFERENCE`), in order, each once."""
    return list(dict.fromkeys(match.group(1) for match in REFERENCE.finditer(text)))


def cites_something(text: str) -> bool:
    """Whether ``text`` holds a citation of this tape's entries or of another tape's."""
    return CITATION.search(text) is not None or REFERENCE.search(text) is not None


def cited_ids(text: str, last: int | None = None) -> list[int]:
    """The ids ``text`` cites, sorted, each once; with ``last`` only ids up to it (the tape's, or the anchor's).

    A run is read clipped to what can exist, so a citation of a huge range costs what the tape holds.
    """
    found: set[int] = set()
    for citation in find_citations(text):
        end = citation.last if last is None else min(citation.last, last)
        found.update(range(max(citation.first, 1), min(end, citation.first + RUN_LIMIT - 1) + 1))
    return sorted(found)


def beyond(text: str, last: int) -> Citation | None:
    """The first citation of ``text`` naming an id past ``last`` (or below 1), else ``None``."""
    return next((c for c in find_citations(text) if not c.within(1, last)), None)


def check_state_citations(state: Any, last: int) -> None:
    """Refuse an anchor state whose text cites an entry past ``last``, the tape's last id before the anchor.

    A citation is bounded by the tape: nothing can be cited that was not written before the anchor.
    Raises :class:`~bub_nb.errors.CitationError` naming the citation; a state without text passes.
    """
    if not isinstance(state, dict):
        return
    for key in CITING_KEYS:
        value = state.get(key)
        if isinstance(value, str) and (citation := beyond(value, last)) is not None:
            shown = value[citation.start : citation.end]
            raise CitationError(
                f"The {key} cites {shown}, beyond the tape's entries #1-#{last}; nothing was written: "
                "cite only entries the tape holds"
            )


def check_citations(text: str, first: int, last: int, also: Collection[int] = frozenset()) -> CheckedText:
    """Keep the citations of ``text`` that lie inside ``first..last`` (or name only ids of ``also``: what the
    lines a phase carried over cite, further back) and remove the others.

    A reversed run (``[#15-#12]``) and a run reaching outside the range are invalid as a whole.
    ``uncited`` lists the sentences left without any citation.
    """
    kept: list[Citation] = []
    pieces: list[str] = []
    position = removed = 0
    for citation in find_citations(text):
        pieces.append(text[position : citation.start])
        position = citation.end
        if citation.within(first, last) or (
            also and citation.first <= citation.last and all(i in also for i in citation.ids)
        ):
            kept.append(citation)
            pieces.append(text[citation.start : citation.end])
        else:
            removed += 1
            # The space before a removed citation would be left doubled or dangling before punctuation.
            after = text[citation.end : citation.end + 1]
            if pieces[-1].endswith(" ") and (not after or after.isspace() or after in ".,;:!?)"):
                pieces[-1] = pieces[-1].rstrip(" ")
    pieces.append(text[position:])
    cleaned = "".join(pieces)
    sources = sorted({entry_id for citation in kept for entry_id in citation.ids})
    return CheckedText(cleaned, tuple(sources), removed, tuple(uncited_sentences(cleaned)))


ABBREVIATIONS: Final = frozenset(
    "vs etc e.g i.e cf approx fig no nr dr mr mrs ms prof st jr sr inc ltd co al ca resp incl esp".split()  # noqa: SIM905
)
"""Words a full stop ends without ending the sentence (compared without case and without the final dot)."""

_OPENING: Final = {"“": "”", "‘": "’", "«": "»", "„": "“"}


_END: Final = re.compile(r"[.!?](?=\s)")
_QUOTES: Final = re.compile('["“‘«„]')


def _ends_nothing(line: str, at: int, start: int) -> bool:
    """Whether the full stop at ``at`` follows an abbreviation (``vs.``, ``e.g.``) or an initial (``J.``)."""
    if line[at] != ".":
        return False
    word = line[start:at].rsplit(None, 1)[-1].lstrip("([\"'“‘").lower() if line[start:at].strip() else ""
    # "ms." ends "took 68 ms." but not "Ms. Lee": only the capitalised title is an abbreviation.
    abbreviation = word in ABBREVIATIONS and (word != "ms" or line[at - 2 : at - 1] == "M")
    return abbreviation or (len(word) == 1 and word.isalpha())


def _split_sentences(text: str) -> list[str]:
    """``text`` cut after ``.``, ``!`` or ``?`` followed by white space, and at line breaks; never inside quotes
    (“…”, "…") or after an abbreviation (``vs.``, ``e.g.``) or an initial (``J.``)."""
    pieces: list[str] = []
    for line in re.split(r"\n+", text):
        if not _QUOTES.search(line):  # no quote to stay inside of: only the ends need a look
            start = 0
            for end in _END.finditer(line):
                if not _ends_nothing(line, end.start(), start):
                    pieces.append(line[start : end.end()])
                    start = end.end()
            pieces.append(line[start:])
            continue
        start, closing, straight = 0, [], False
        for at, char in enumerate(line):
            if char in _OPENING:
                closing.append(_OPENING[char])
            elif closing and char == closing[-1]:
                closing.pop()
            elif char == '"':
                straight = not straight
            if char not in ".!?" or closing or straight or at + 1 >= len(line) or not line[at + 1].isspace():
                continue
            if _ends_nothing(line, at, start):
                continue
            pieces.append(line[start : at + 1])
            start = at + 1
        pieces.append(line[start:])
    return pieces


def without_unseen_citations(texts: tuple[str, ...], seen: frozenset[int]) -> tuple[tuple[str, ...], int]:
    """``texts`` without the citations naming none of the ``seen`` ids (what a model was shown), and how many."""
    cleaned, removed = [], 0
    for text in texts:
        kept, position = [], 0
        for citation in find_citations(text):
            named = range(citation.first, min(citation.last, citation.first + RUN_LIMIT - 1) + 1)
            if any(entry_id in seen for entry_id in named):
                continue
            kept.append(text[position : citation.start].rstrip(" "))
            position = citation.end
            removed += 1
        cleaned.append("".join([*kept, text[position:]]))
    return tuple(cleaned), removed


def without_unknown_references(texts: tuple[str, ...], known: Collection[str]) -> tuple[tuple[str, ...], int]:
    """``texts`` without the ``tape://`` citations that are not ``known`` (what the lines carried into a phase
    cite: a model may repeat those, not make up others), and how many were taken out."""
    removed = 0

    def keep(match: re.Match[str]) -> str:
        nonlocal removed
        if match.group(1) in known:
            return match.group(0)
        removed += 1
        return ""

    cleaned = []
    for text in texts:
        kept = REFERENCE.sub(keep, text) if "tape://" in text else text
        cleaned.append(re.sub(r" +(?=[.,;:!?)]|$)", "", kept, flags=re.MULTILINE) if kept != text else kept)
    return tuple(cleaned), removed


def own_words_state(summarized: dict[str, Any], state: Mapping[str, Any]) -> dict[str, Any]:
    """A summarizing handoff's state (``summarized``) with the user's ``state`` over it.

    When the user's own ``summary`` or ``next_steps`` replaces the model's text, ``sources``, ``uncited`` and
    ``summarized_by`` describe the text kept, not the text thrown away.
    """
    own = {key: state[key] for key in CITING_KEYS if isinstance(state.get(key), str)}
    if not own:
        return {**summarized, **state}
    first, last = summarized["range"]
    kept = {**summarized, **own}
    checked = [check_citations(kept[key], first, last) for key in CITING_KEYS if isinstance(kept.get(key), str)]
    return {
        **summarized,
        "sources": sorted({i for text in checked for i in text.sources}),
        "uncited": [sentence for text in checked for sentence in text.uncited],
        "summarized_by": "user" if "summary" in own else f"{summarized.get('summarized_by')} and user",
        **state,
    }


def sentences(text: str) -> list[str]:
    """The sentences of ``text``: split after ``.``, ``!`` or ``?`` and at line breaks, list marks dropped.

    A full stop inside quotes or after an abbreviation does not end a sentence.
    """
    found: list[str] = []
    for part in (_LIST_MARK.sub("", part).strip() for part in _split_sentences(text)):
        if not any(char.isalnum() for char in REFERENCE.sub("", CITATION.sub("", part))):
            # "It was decided. [#12]" cites for the sentence before it.
            if found and cites_something(part):
                found[-1] = f"{found[-1]} {part}"
            continue
        found.append(part)
    return found


def uncited_sentences(text: str) -> list[str]:
    """The sentences of ``text`` that hold no citation."""
    return [sentence for sentence in sentences(text) if not cites_something(sentence)]


CITING_TITLES: Final = {"summary": "Summary", "next_steps": "Next steps"}
"""The state keys whose text may cite entries, in the order they are shown, with their headings."""

CITING_KEYS: Final = tuple(CITING_TITLES)

BOOKKEEPING_KEYS: Final = (
    "sources", "range", "summarized_by", "uncited", "removed_citations", "unsupported_citations",
)  # fmt: skip
"""What a summarizing handoff adds beside its text, for readers and tools rather than the model."""

SUMMARY_KEYS: Final = (*CITING_KEYS, *BOOKKEEPING_KEYS)
"""Every key a summarizing handoff adds to its anchor's state."""


def citing_text(state: dict[str, Any]) -> str:
    """The text of a state's citing keys, joined, for finding its citations."""
    return " ".join(value for key in CITING_KEYS if isinstance(value := state.get(key), str))


def state_sources(state: Any, last: int | None = None) -> tuple[int, ...]:
    """The entries an anchor state cites: its ``sources`` when it lists ids, else the ids its text cites.

    A plain handoff cites nothing and gets ``()``; ids that are not positive integers are left out, and
    with ``last`` (the anchor's own id less one, or the tape's last id) so are ids past it.
    """
    if not isinstance(state, dict):
        return ()
    listed = state.get("sources")
    if isinstance(listed, list | tuple):
        top = last if last is not None else float("inf")
        return tuple(sorted({value for value in listed if type(value) is int and 0 < value <= top}))
    return tuple(cited_ids(citing_text(state), last))


def state_references(state: Any) -> tuple[str, ...]:
    """The ``tape://`` addresses an anchor state's text cites: entries of other tapes its carried lines name."""
    return tuple(find_references(citing_text(state))) if isinstance(state, dict) else ()


def state_uncited(state: Any) -> tuple[str, ...] | None:
    """The sentences an anchor state says cite nothing, or ``None`` when it does not say (a plain handoff)."""
    if not isinstance(state, dict):
        return None
    listed = state.get("uncited")
    if not isinstance(listed, list | tuple):
        return None
    return tuple(str(sentence) for sentence in listed)
