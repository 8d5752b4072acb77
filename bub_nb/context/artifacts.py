"""Artifacts of a text found by regular expressions: numbers with units, paths, URLs, identifiers, commands, decisions.

Extraction is deterministic and works in a fixed order, masking what each step found so a later step does
not read it again: citations (``[#12]``) are dropped, then URLs, shell commands, file paths and identifiers
are taken, then numbers (with a unit when one follows) from what is left; decisions are the sentences that
say something was decided. Each artifact has a ``key``, the form two texts are compared by.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from bub_nb.tape.citations import CITATION, sentences

KINDS: Final = ("number", "path", "url", "identifier", "command", "decision")
"""The kinds of artifact, in the order reports list them."""

URL: Final = re.compile(r"\bhttps?://[^\s<>\"'`)\]]+[^\s<>\"'`)\].,;:!?]")
COMMAND_WORDS: Final = (
    "bub-nb|bub|python3?|pip|uv|git|pytest|make|npm|npx|yarn|cargo|go|docker|kubectl|curl|wget|ls|cd|cat|grep|rg|"
    "sed|awk|find|rm|cp|mv|mkdir|chmod|tar|ssh|jupyter|bash|sh|sqlite3|psql|ruff|mypy|echo|export|head|tail"
)
_BACKTICK: Final = re.compile(r"`([^`\n]+)`")
_PROMPT_COMMAND: Final = re.compile(r"(?m)^\s*\$ +(\S[^\n]*?)\s*$")
_COMMAND_START: Final = re.compile(rf"^(?:{COMMAND_WORDS})(?:\s|$)")
PATH: Final = re.compile(
    # Possessive runs (``++``) never give back what the next part could not use anyway: no backtracking.
    r"(?<![\w/.~-])(?:~|\.{1,2})?/?(?:[\w.-]++/)+[\w-]++(?:\.\w++)*"  # with a slash: src/app.py, /etc/hosts
    r"|(?<![\w/.~-])[\w-]++\.(?:py|ipynb|csv|tsv|json|jsonl|ya?ml|toml|md|txt|parquet|sql|sh|log|html|js|ts|"
    r"cfg|ini|lock|xlsx?|png|svg|pdf|db|rs|go|c|h|cpp|java|rb)\b"  # a file name with a known suffix
)
IDENTIFIER: Final = re.compile(
    r"\b[A-Za-z_]\w*+(?:\.[A-Za-z_]\w*+)+(?:\(\))?"  # dotted names: pd.read_csv, Tape.retract()
    r"|\b[A-Za-z]\w*+\(\)"  # calls: handoff()
    r"|\b_*+[a-z][a-z0-9]*+(?:_[a-z0-9]++)+\b"  # snake_case
    r"|\b[A-Z][a-z0-9]++(?:[A-Z][a-z0-9]*+)+\b"  # CamelCase
    r"|\b[A-Z][A-Z0-9]*+_[A-Z0-9_]+\b"  # CONSTANT_NAMES
)
UNITS: Final = (
    "%|ms|µs|us|ns|s|sec|secs|seconds?|min|mins|minutes?|h|hours?|days?|weeks?|months?|years?|"
    "[kKMGT]i?B|[kKMGT]i?b|bytes?|B|tok|tokens?|rows?|cols?|columns?|entries|lines?|files?|requests?|"
    "x|×|px|pt|em|m|cm|mm|km|kg|g|mg|l|ml|°C|°F|K|Hz|kHz|MHz|GHz|W|kW|V|A|USD|EUR|GBP|\\$|€|£"
)
NUMBER: Final = re.compile(
    rf"(?=[-+\d])(?<![\w.])[-+]?(?:\d{{1,3}}(?:,\d{{3}})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?(?:\s?(?P<unit>{UNITS}))?(?![\w.]\d)"
    r"(?!\w)"
)
TEMPORAL: Final = re.compile(
    r"(?<![\w.:/-])(?:"
    r"\d{4}-\d{2}-\d{2}(?:[T ]\d{1,2}:\d{2}(?::\d{2})?Z?)?"  # dates, with a time: 2026-06-06, 2026-06-06T10:00
    r"|\d{1,2}/\d{1,2}/\d{2,4}"  # 06/06/2026
    r"|\d{1,2}:\d{2}(?::\d{2})?(?:\s?[ap]m\b)?"  # times: 10:00, 9:30:15, 7:45 pm
    r"|v?\d+\.\d+\.\d+(?:[-+][\w.]+)?"  # versions: 3.11.7, v1.2.0-rc1
    r")(?![\w:/])"
)
"""Times, dates and versions: each one number, taken whole before a date could read as a path or a time as two."""
_CURRENCY_FIRST: Final = re.compile(r"[$€£](?=\d)")
_DECISION_WORDS: Final = (
    r"(?=[dacsgwlki])\b(?:decided|decide|decision|agreed|agree|chose|chosen|choose|settled on|go(?:ing)? with|"
    r"we will|we'll|let's|switch(?:ed)? to|keep|drop(?:ped)?|instead of)\b"
)
DECISION: Final = re.compile(_DECISION_WORDS, re.IGNORECASE)
_DECISION_LOWER: Final = re.compile(_DECISION_WORDS)  # over lowercased text, which is several times faster
_WORD: Final = re.compile(r"[a-z0-9][a-z0-9_.-]*[a-z0-9]|[a-z0-9]", re.IGNORECASE)
_STOP: Final = frozenset(
    [
        "the",
        "a",
        "an",
        "and",
        "or",
        "of",
        "to",
        "in",
        "on",
        "for",
        "with",
        "we",
        "i",
        "you",
        "it",
        "is",
        "are",
        "was",
        "be",
        "this",
        "that",
        "these",
        "those",
        "will",
        "shall",
        "decided",
        "decide",
        "decision",
        "agreed",
        "agree",
        "chose",
        "chosen",
        "choose",
        "settled",
        "go",
        "going",
        "let's",
        "lets",
        "use",
        "keep",
        "instead",
        "switch",
        "switched",
        "drop",
        "dropped",
        "so",
        "then",
        "now",
        "as",
        "at",
        "by",
        "from",
        "them",
        "they",
        "our",
        "us",
        "my",
    ]
)
DECISION_OVERLAP: Final = 0.75
"""A decision is kept when a sentence of the summary holds this share of its content words."""


@dataclass(frozen=True, slots=True)
class Artifact:
    """One artifact: its kind, the text as written and the key texts are compared by."""

    kind: str
    text: str
    key: str


def _number_key(match: re.Match[str]) -> str:
    number = match.group(0)
    unit = match.group("unit") or ""
    value = number[: len(number) - len(unit)].strip().replace(",", "").lstrip("+")
    return f"{value}{unit}"


def content_words(sentence: str) -> frozenset[str]:
    """The words of a sentence that carry its meaning: lowercased, stop words and decision markers dropped."""
    return frozenset(w for w in (m.lower() for m in _WORD.findall(sentence)) if w not in _STOP)


QUOTED: Final = re.compile(r"“[^”]{40,}”|\"[^\"\n]{40,}\"")
"""A long quotation: the words of another entry, which decide nothing of their own where they are quoted."""


def _decisions(text: str) -> list[tuple[int, Artifact]]:
    """The decision sentences of ``text``: only the lines holding a decision word are split into sentences;
    a long quotation is left out (an answer quoting the user repeats a decision, it does not make one)."""
    found = []
    done = -1
    if "“" in text or '"' in text:
        text = QUOTED.sub(_blank, text)
    lower = text.lower()
    matches = _DECISION_LOWER.finditer(lower) if len(lower) == len(text) else DECISION.finditer(text)
    for match in matches:
        if match.start() <= done:
            continue
        start = text.rfind("\n", 0, match.start()) + 1
        end = text.find("\n", match.end())
        done = end = len(text) if end == -1 else end
        line = text[start:end]
        for sentence in sentences(line):
            if DECISION.search(sentence) and (words := content_words(sentence)):
                at = line.find(sentence[:24])
                found.append((start + max(at, 0), Artifact("decision", sentence, " ".join(sorted(words)))))
    return found


def _blank(match: re.Match[str]) -> str:
    return " " * len(match.group(0))


def located(text: str) -> list[tuple[int, Artifact]]:
    """The artifacts of ``text`` with where each starts, in the order of :data:`KINDS`, each kind in reading order.

    Texts joined by blank lines give each text's artifacts: no artifact spans a line break.
    """
    if "[#" in text:
        text = CITATION.sub(_blank, text)
    found: list[tuple[int, Artifact]] = []
    rest = text
    if "://" in rest:
        found.extend((m.start(), Artifact("url", m.group(0), m.group(0).rstrip("/"))) for m in URL.finditer(rest))
        rest = URL.sub(_blank, rest)
    if ":" in rest or "/" in rest or "-" in rest or "." in rest:
        temporal = [(m.start(), Artifact("number", m.group(0), m.group(0))) for m in TEMPORAL.finditer(rest)]
        if temporal:
            found.extend(temporal)
            rest = TEMPORAL.sub(_blank, rest)
    commands: list[tuple[int, int, str]] = []
    if "$" in rest:
        commands.extend((m.start(1), m.end(), m.group(1)) for m in _PROMPT_COMMAND.finditer(rest))
    if "`" in rest:
        for match in _BACKTICK.finditer(rest):
            inner = match.group(1).strip()
            if _COMMAND_START.match(inner):
                commands.append((match.start(), match.end(), inner))
    if commands:
        pieces, position = [], 0
        for start, end, command in sorted(commands):
            if start < position:  # a `command` quoted inside a $ line is part of it
                continue
            found.append((start, Artifact("command", command, " ".join(command.split()))))
            pieces += [rest[position:start], " " * (end - start)]
            position = end
        rest = "".join([*pieces, rest[position:]])
    for kind, pattern in (("path", PATH), ("identifier", IDENTIFIER)):
        pieces, position = [], 0
        for match in pattern.finditer(rest):
            found.append((match.start(), Artifact(kind, match.group(0), match.group(0).removesuffix("()"))))
            pieces += [rest[position : match.start()], " " * (match.end() - match.start())]
            position = match.end()
        rest = "".join([*pieces, rest[position:]]) if pieces else rest
    rest = _CURRENCY_FIRST.sub(" ", rest)
    found.extend((m.start(), Artifact("number", m.group(0), _number_key(m))) for m in NUMBER.finditer(rest))
    found.extend(_decisions(text))
    order = {kind: index for index, kind in enumerate(KINDS)}
    found.sort(key=lambda pair: (order[pair[1].kind], pair[0]))
    return found


def extract(text: str) -> list[Artifact]:
    """The artifacts of ``text`` in the order of :data:`KINDS`, each kind in reading order."""
    return [artifact for _, artifact in located(text)]


def _word_character(char: str) -> bool:
    return char.isalnum() or char == "_"


def stands_in(text: str, summary: str) -> bool:
    """Whether ``text`` occurs in ``summary`` as written, not inside a longer word, name or number."""
    start = summary.find(text)
    while start != -1:
        before = summary[start - 1 : start]
        after = summary[start + len(text) : start + len(text) + 2]
        glued_before = bool(before) and (_word_character(before) or before == ".")
        glued_after = bool(after) and (_word_character(after[0]) or (after[:1] == "." and after[1:2].isalnum()))
        if not glued_before and not glued_after:
            return True
        start = summary.find(text, start + 1)
    return False


def is_kept(
    artifact: Artifact, summary: str, found: set[tuple[str, str]], sentence_words: list[frozenset[str]]
) -> bool:
    """Whether ``artifact`` survives in ``summary``: its key is among the summary's artifacts of its kind, or
    its text stands in the summary as written (:func:`stands_in`); a decision survives when one sentence of
    the summary (``sentence_words``: each sentence's :func:`content_words`) holds :data:`DECISION_OVERLAP` of
    its content words."""
    if artifact.kind == "decision":
        wanted = content_words(artifact.text)
        return any(len(wanted & words) >= DECISION_OVERLAP * len(wanted) for words in sentence_words)
    return (artifact.kind, artifact.key) in found or stands_in(artifact.text, summary)
