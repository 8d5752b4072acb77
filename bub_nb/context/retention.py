"""What a summarizing handoff kept: the artifacts of the phase it closed, each kept in its state or lost.

The phase is the ``range`` the anchor's state records (else the entries between the anchor before it and
this one). Its entries' text and the state's text (every key but the bookkeeping ones: ``sources``,
``range``, ...) are read by :func:`~bub_nb.context.artifacts.extract`; an artifact is counted once per phase,
at the first entry it appears in.

Only what the phase brought counts. A number counts where a person or a tool wrote it (user messages, tool calls
and results; an answer's counts of messages or tools are bookkeeping), and only with at least two significant
characters (``10:00``, ``12``, ``3,000``; not ``1`` or ``00``). A decision counts from a sentence that decides:
not an echo of another message (``assistant: [Anchor created: ...]``), not a decision word inside a name
(``trip/decided``), and not one the phase's opening anchor already carried in.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bub_nb.context.artifacts import (
    DECISION,
    DECISION_OVERLAP,
    KINDS,
    PATH,
    Artifact,
    content_words,
    extract,
    is_kept,
    located,
)
from bub_nb.context.references import Reference, follow_reference
from bub_nb.errors import BubNbError
from bub_nb.tape.anchors import AnchorSummary
from bub_nb.tape.citations import BOOKKEEPING_KEYS, sentences, state_references
from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.text import payload_text

if TYPE_CHECKING:
    import pandas as pd

    from bub_nb.tape import Tape

_READ_KINDS = ("message", "tool_call", "tool_result", "error")
#: The lines of an answer that repeat another message: ``assistant: ...`` (a transcript or an echo), an anchor.
_ECHO = re.compile(
    r"^\s*(?:[-*]\s*)?(?:\d+\.\s*)?(?:(?:system|user|assistant|tool)\s*:|The anchor `[^`]+` carries:)"
    r"|\[Anchor created:",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Found:
    """An artifact of the phase, the entry it first appears in, and whether the summary kept it."""

    artifact: Artifact
    entry: int
    kept: bool


@dataclass(frozen=True, slots=True)
class Retention:
    """The retention report of one anchor: every artifact of its phase, kept or lost."""

    anchor: str
    anchor_id: int
    range: tuple[int, int]
    found: tuple[Found, ...]
    unsupported_citations: int = 0
    """Citations the summary's model gave for claims the cited entries do not hold, which the handoff dropped."""
    references: tuple[Reference, ...] = ()
    """The ``tape://`` citations of the summary (carried lines whose source lies on another tape), each followed
    to the entry it names, or with why it could not be read."""

    def counts(self) -> dict[str, tuple[int, int]]:
        """``kind -> (kept, total)`` for every kind, zeros included."""
        return {
            kind: (
                sum(1 for f in self.found if f.artifact.kind == kind and f.kept),
                sum(1 for f in self.found if f.artifact.kind == kind),
            )
            for kind in KINDS
        }

    def lost(self) -> tuple[Found, ...]:
        return tuple(f for f in self.found if not f.kept)

    def short(self) -> str:
        """One line for a table: ``number 3/4 · path 1/1 ...``, kinds the phase has none of left out."""
        parts = [f"{kind} {kept}/{total}" for kind, (kept, total) in self.counts().items() if total]
        dropped = self.unsupported_citations
        unsupported = [f"{dropped} unsupported citation{'s' if dropped != 1 else ''} dropped"] if dropped else []
        elsewhere = []
        if self.references:
            unread = sum(1 for ref in self.references if ref.entry is None)
            elsewhere = [f"{len(self.references)} cited on other tapes" + (f", {unread} not found" if unread else "")]
        return " · ".join(parts + unsupported + elsewhere) or "nothing to keep"

    def frame(self) -> pd.DataFrame:
        """One row per artifact: ``kind``, ``artifact`` (as written), ``kept``, ``entry`` (where it lived)."""
        import pandas as pd

        rows = [(f.artifact.kind, f.artifact.text, f.kept, f.entry) for f in self.found]
        frame = pd.DataFrame(rows, columns=["kind", "artifact", "kept", "entry"])
        frame.attrs["counts"] = self.counts()
        frame.attrs["anchor"] = self.anchor
        frame.attrs["unsupported_citations"] = self.unsupported_citations
        frame.attrs["references"] = {
            ref.address: (ref.entry.id if ref.entry is not None else None) for ref in self.references
        }
        return frame


def has_summary(state: Any) -> bool:
    """Whether an anchor state is a summary's (it holds a ``summary`` text)."""
    return isinstance(state, dict) and isinstance(state.get("summary"), str)


def state_text(state: dict[str, Any]) -> str:
    """The text of a summary's state that a reader gets: every key but the bookkeeping ones."""
    parts = []
    for key, value in state.items():
        if key in BOOKKEEPING_KEYS:
            continue
        parts.append(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str))
    return "\n".join(parts)


def _phase_range(tape: Tape, anchor: AnchorSummary, anchors: list[AnchorSummary]) -> tuple[int, int]:
    recorded = anchor.state.get("range") if anchor.state else None
    if isinstance(recorded, list | tuple) and len(recorded) == 2 and all(type(v) is int for v in recorded):
        return (recorded[0], recorded[1])
    before = [other.id for other in anchors if other.id < anchor.id]
    return ((before[-1] + 1) if before else 1, anchor.id - 1)


def _resolve(anchors: list[AnchorSummary], anchor: str | int | AnchorSummary, tape: str) -> AnchorSummary:
    if isinstance(anchor, AnchorSummary):
        return anchor
    matching = [a for a in anchors if (a.id == anchor if isinstance(anchor, int) else a.name == anchor)]
    if not matching:
        raise BubNbError(f"No anchor {anchor!r} on tape {tape!r}")
    return matching[-1]


def significant(number: str) -> int:
    """How many significant characters a number has: its digits, less the zeros that lead them."""
    return len(re.sub(r"\D", "", number).lstrip("0"))


def _counts(artifact: Artifact, entry: TapeEntry, carried: frozenset[str]) -> bool:
    """Whether ``artifact``, found in ``entry``, is something the phase brought (see the module's docstring)."""
    if artifact.kind == "number":
        written = entry.kind in ("tool_call", "tool_result") or _role(entry) == "user"
        return written and significant(artifact.key) >= 2
    if artifact.kind == "decision":
        if _ECHO.search(artifact.text) or not DECISION.search(PATH.sub(" ", artifact.text)):
            return False
        words = content_words(artifact.text)
        return len(words & carried) < DECISION_OVERLAP * len(words)
    return True


def _role(entry: TapeEntry) -> str:
    role = entry.payload.get("role") if isinstance(entry.payload, dict) else None
    return role if isinstance(role, str) else ""


def report(
    entries: list[TapeEntry],
    state: dict[str, Any],
    *,
    anchor: str = "",
    anchor_id: int = 0,
    carried_in: dict[str, Any] | None = None,
) -> Retention:
    """The retention report of ``state`` over the phase ``entries``; ``carried_in`` is the state of the anchor the
    phase opened with, whose decisions the phase did not make."""
    summary = state_text(state)
    summary_found = {(a.kind, a.key) for a in extract(summary)}
    sentence_words = [content_words(sentence) for sentence in sentences(summary)]
    carried = content_words(state_text(carried_in)) if carried_in else frozenset()
    # One pass over the phase's texts joined by blank lines; bisecting a position finds its entry.
    read = [entry for entry in entries if entry.kind in _READ_KINDS]
    texts = [payload_text(entry.kind, entry.payload).replace("\r", "") for entry in read]
    starts, position = [], 0
    for text in texts:
        starts.append(position)
        position += len(text) + 2
    seen: dict[tuple[str, str], Found] = {}
    for at, artifact in located("\n\n".join(texts)):
        if (artifact.kind, artifact.key) in seen:
            continue
        entry = read[bisect_right(starts, at) - 1]
        if _counts(artifact, entry, carried):
            kept = is_kept(artifact, summary, summary_found, sentence_words)
            seen[(artifact.kind, artifact.key)] = Found(artifact, entry.id, kept)
    order = {kind: index for index, kind in enumerate(KINDS)}
    found = tuple(sorted(seen.values(), key=lambda f: (order[f.artifact.kind], f.entry)))
    span = (entries[0].id, entries[-1].id) if entries else (0, 0)
    return Retention(anchor, anchor_id, span, found)


def anchor_retention(
    tape: Tape, anchor: str | int | AnchorSummary, anchors: list[AnchorSummary] | None = None
) -> Retention:
    """The retention report of an anchor (a name, its last anchor of that name; an id; or an ``AnchorSummary``);
    ``anchors`` is the tape's anchor list when the caller has it already."""
    anchors = tape.anchors(limit=None) if anchors is None else anchors
    found = _resolve(anchors, anchor, tape.name)
    if not has_summary(found.state):
        raise BubNbError(f"Anchor {found.name!r} (#{found.id}) has no summary; only a summarizing handoff has one")
    assert found.state is not None
    first, last = _phase_range(tape, found, anchors)
    # The anchor the phase opened with (at its first id, or just before it), whose state the phase inherited.
    opening = [a for a in anchors if a.id in (first, first - 1) and a.id != found.id]
    carried_in = opening[-1].state if opening and isinstance(opening[-1].state, dict) else None
    result = report(
        tape.read(first, last + 1), found.state, anchor=found.name, anchor_id=found.id, carried_in=carried_in
    )
    dropped = found.state.get("unsupported_citations")
    unsupported = dropped if type(dropped) is int and dropped >= 0 else 0
    references = tuple(follow_reference(tape, address) for address in state_references(found.state))
    return Retention(found.name, found.id, (first, last), result.found, unsupported, references)


def retention(tape: Tape, anchor: str | int | AnchorSummary) -> pd.DataFrame:
    """What the summary of ``anchor`` kept of the phase it closed: one row per artifact (``kind``, ``artifact``,
    ``kept``, ``entry``); ``frame.attrs["counts"]`` holds ``kind -> (kept, total)``."""
    return anchor_retention(tape, anchor).frame()


def retention_lines(tape: Tape) -> dict[int, str]:
    """``anchor id -> "number 3/4 · path 1/1 ..."`` for every anchor with a summary, for an anchor table."""
    anchors = tape.anchors(limit=None)
    return {a.id: anchor_retention(tape, a, anchors).short() for a in anchors if has_summary(a.state)}
