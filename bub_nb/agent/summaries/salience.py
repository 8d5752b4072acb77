"""What a phase established, sentence by sentence: the salient facts of both speakers, as short cited notes.

A sentence weighs more for each name it holds (a capitalised word inside it), each number or date (a digit, a
month, a weekday, ``yesterday``, ``last week``), each word of a decision, a plan or a change of state (``decided``,
``going to``, ``started``, ``moved``, ``adopted``, ...), and each word the phase (and what was carried into it)
had not said before: a first mention. Pleasantries (thanks, greetings, praise) and questions weigh less, and a
sentence whose words another note already holds is a near-duplicate, left out. A note is the sentence itself
when short, else its content words in order (stop words and pleasantries left out), and cites its entry.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from bub_nb.agent.summaries.decisions import Said
from bub_nb.context.artifacts import located
from bub_nb.context.tokens import count_text_tokens
from bub_nb.tape.citations import CITATION, format_citation, sentences

NOTE_WORDS: Final = 14
"""The most content words a note keeps of a long sentence."""
SHORT: Final = 72
"""A sentence up to this many characters is quoted as it is."""
DUPLICATE: Final = 0.6
"""A sentence sharing this share of its content words with a note already kept is a near-duplicate."""
PER_ENTRY: Final = 2
"""The most sentences noted from one entry."""

_SPEAKER: Final = re.compile(r"^\s*([A-Z][\w.'-]*(?: [A-Z][\w.'-]*){0,2}):\s+")
_LABEL: Final = re.compile(r"^\s*(?:[-*]\s*)?(?:Carried over:\s*)?(?:Noted|Asked|Answered|Decided|Last answer):\s*")
SELF_LABELLED: Final = re.compile(r"^\[[^\]#][^\]]*model[^\]]*\]")
_ANSWERED: Final = re.compile(r"^\s*(?:[-*]\s*)?(?:Carried over:\s*)?Answered:")
_WORD: Final = re.compile(r"[A-Za-z][A-Za-z'-]*|\d[\d,.:/-]*")
_NUMBER: Final = re.compile(
    r"\d|\b(?:january|february|march|april|may|june|july|august|september|october|november|december|monday|tuesday|"
    r"wednesday|thursday|friday|saturday|sunday|yesterday|tomorrow|tonight|today|weekend|ago|last (?:week|month|year)|"
    r"next (?:week|month|year)|since|until)\b",
    re.IGNORECASE,
)
_CHANGE: Final = re.compile(
    r"\b(?:decid\w*|chose|plan\w*|going to|gonna|will|'ll|start\w*|began|begin\w*|join\w*|mov(?:e|ed|ing)|"
    r"adopt\w*|bought|buy\w*|got|get(?:ting)?|became|become|lost|finish\w*|quit|married|graduat\w*|sign(?:ed)? up|"
    r"launch\w*|open(?:ed)?|new|first|switch\w*|built|made|won|visit\w*|went|trip|applied|hired|left)\b",
    re.IGNORECASE,
)
_PLEASANT: Final = re.compile(
    r"\b(?:thanks?|thank you|thx|hey|hi|hello|bye|goodbye|wow|awesome|amazing|great|glad|cool|nice|congrat\w*|"
    r"lovely|sweet|sounds? (?:good|great|fun)|take care|see you|catch you|good to (?:see|hear)|how are you|"
    r"how have you been|no problem|you're welcome|totally|absolutely|for sure|so proud|that's so|i'm so happy)\b",
    re.IGNORECASE,
)
STOP: Final = frozenset(
    """a an the and or but so of to in on at for with from by as is are was were be been being am it its it's this
    that these those there here i me my mine we us our you your he him his she her they them their what which who
    whom when where why how do does did doing done have has had having not no yes just really very too also can
    could would should may might must shall about into over than then them if because while all any some such only
    own same more most much many other again once ever even still lot lots like kind sort thing things stuff i'm
    i've i'd i'll you're you've we're it was that's what's don't didn't doesn't isn't wasn't can't oh yeah ok okay
    well um uh hmm haha lol""".split()  # noqa: SIM905
)


@dataclass(frozen=True, slots=True)
class Note:
    """One cited note: the entry, the line, its weight and its content words."""

    entry: int
    line: str
    weight: float
    words: frozenset[str]

    @property
    def tokens(self) -> int:
        return count_text_tokens(self.line) + 2


def content_words(text: str) -> list[str]:
    return [w for w in (m.group(0).strip(".,:/-'") for m in _WORD.finditer(text)) if w and w.lower() not in STOP]


def _names(sentence: str, speakers: frozenset[str]) -> int:
    words = _WORD.findall(sentence)
    return sum(1 for word in words[1:] if word[:1].isupper() and word.lower() not in STOP | speakers)


def _note_text(sentence: str) -> str:
    flat = " ".join(CITATION.sub("", sentence).split()).replace("“", '"').replace("”", '"')
    if len(flat) <= SHORT:
        return f"“{flat}”"
    kept = [w for w in content_words(flat) if not _PLEASANT.fullmatch(w)]
    return "“" + " ".join(kept[:NOTE_WORDS]) + ("…" if len(kept) > NOTE_WORDS else "") + "”"


def _speaker(item: Said) -> tuple[str, str]:
    """Who speaks in ``item`` (a ``Name:`` its text opens with, else its role) and the text without it."""
    found = _SPEAKER.match(item.text)
    if found:
        return found.group(1), item.text[found.end() :]
    return {"user": "User", "assistant": "Assistant", "tool": "Tool", "tool_call": "Call"}.get(
        item.role, "Error"
    ), item.text


def weigh(sentence: str, said: set[str], speakers: frozenset[str] = frozenset()) -> float:
    """How much ``sentence`` establishes, given the words ``said`` before it (first mentions count) and the
    names of who speaks (addressing someone names nothing new)."""
    sentence = _LABEL.sub("", CITATION.sub("", sentence))
    words = [w for w in content_words(sentence) if w.lower() not in speakers]
    if len(words) < 2:
        return 0.0
    new = {w.lower() for w in words} - said
    weight = 2.0 * min(_names(sentence, speakers), 3) + 2.0 * min(len(_NUMBER.findall(sentence)), 3)
    weight += 1.5 * min(len(_CHANGE.findall(sentence)), 2) + 0.5 * min(len(new), 6)
    weight -= 2.0 * len(_PLEASANT.findall(sentence))
    if sentence.rstrip().endswith("?"):
        weight -= 1.5
    return weight


def line_weight(line: str) -> float:
    """How much a summary's line holds: its salience, each artifact in it (a number, a path, ...), and more for a
    decision; a list of what an answer mentioned (``Answered:``) holds least."""
    text = CITATION.sub("", line)
    if _ANSWERED.match(text):
        return 0.0  # the artifacts an answer listed: its sentences, when they say something, have notes of their own
    weight = weigh(text, set()) + 3.0 * sum(1 for _, artifact in located(text) if artifact.kind != "decision")
    return weight + (6.0 if "Decided:" in line else 0.0)


def notes(items: Sequence[Said], carried: Iterable[str] = ()) -> list[Note]:
    """Every sentence of ``items`` worth a note, heaviest first (ties: newest first), near-duplicates left out."""
    said: set[str] = {w.lower() for line in carried for w in content_words(line)}
    found: list[tuple[float, int, str, str, frozenset[str]]] = []
    speakers = frozenset(
        name.lower() for item in items if (m := _SPEAKER.match(item.text)) for name in m.group(1).split()
    )
    speakers |= {name[:3] for name in speakers if len(name) > 3}  # "Mel" for "Melanie"
    for item in items:
        if item.role not in ("user", "assistant", "tool", "error") or not item.text.strip():
            continue
        if SELF_LABELLED.match(item.text):
            continue  # a model saying what it is and what it received ("[offline teaching model; ...]")
        who, text = _speaker(item)
        for sentence in sentences(text):
            weight = weigh(sentence, said, speakers)
            words = frozenset(w.lower() for w in content_words(sentence))
            said |= words
            if weight > 0:
                found.append((weight, item.first, who, sentence, words))
    found.sort(key=lambda f: (-f[0], -f[1]))
    kept: list[Note] = []
    per_entry: dict[int, int] = {}
    for weight, entry, who, sentence, words in found:
        if per_entry.get(entry, 0) >= PER_ENTRY:
            continue
        if any(len(words & note.words) >= DUPLICATE * max(1, len(words)) for note in kept):
            continue
        per_entry[entry] = per_entry.get(entry, 0) + 1
        kept.append(Note(entry, f"{who}: {_note_text(sentence)} {format_citation(entry)}.", weight, words))
    return kept


def within(found: Sequence[Note], budget: int) -> list[Note]:
    """The heaviest notes that fit ``budget`` tokens, in tape order; a note too long is passed for shorter ones."""
    kept, used = [], 0
    for note in found:
        if used + note.tokens <= budget:
            kept.append(note)
            used += note.tokens
    return sorted(kept, key=lambda note: note.entry)
