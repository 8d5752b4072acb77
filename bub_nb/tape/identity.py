"""Which tape a notebook writes once its file was renamed, moved, duplicated, copied or cloned.

A notebook's own tape is named after its path, so any of those gives it a new name. What a saved notebook still
carries is the tape its outputs name (every answer's ``bub_nb`` metadata), and that decides:

- the outputs name no tape, or the notebook's own: its own tape, but for the case below;
- a choice was kept (``%tape continue NAME|--own``): that choice;
- its outputs name no tape, and its own tape went on with the notebook that stood at this path before (that
  notebook was renamed or moved, and a new one took its place): a fresh tape of its own, so the two never mix;
- its own tape already holds entries: its own tape, whatever the outputs say;
- this home lacks the notebook's tape and one is attached beside it (``NOTEBOOK.tape.jsonl``, ``%tape attach``):
  that one, taken up as the notebook's own tape;
- the tape they name is not in this home: a clone from elsewhere, which only its user can settle;
- another notebook file at that tape's recorded path still claims it: a duplicate or a copy, forked;
- else the notebook was renamed or moved: it continues that tape.

The decision is pure: the notebook layer reads the saved file and the stores and acts on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Final


class Identity(Enum):
    OWN = "own"
    """Write the notebook's own tape."""
    CONTINUE = "continue"
    """Renamed or moved, or a kept choice: write ``Decision.tape``."""
    FORK = "fork"
    """A duplicate or a copy: fork ``Decision.tape`` into the notebook's own tape, then write that."""
    FOREIGN = "foreign"
    """Cloned elsewhere: the outputs name ``Decision.tape``, which this home lacks; write the own tape and say so."""
    ATTACHED = "attached"
    """The home lacks the notebook's tape and one is attached beside it: take that up as the own tape, then write it."""
    FRESH = "fresh"
    """A new notebook where a moved one stood: its own tape went with that one; start a fresh tape and keep it."""


KEEP_OWN: Final = "--own"
"""What a kept choice holds when the notebook keeps its own tape."""


@dataclass(frozen=True, slots=True)
class Evidence:
    """What the decision reads: the notebook's own tape name, the tape its saved outputs name, and the facts about
    both that the stores and the file system tell."""

    own: str
    claimed: str | None = None
    kept: str | None = None
    own_has_entries: bool = False
    claimed_exists: bool = False
    claimed_elsewhere: bool = False
    """Another notebook file, at the path the claimed tape records, still names that tape in its outputs."""
    attached: bool = False
    """The home lacks the own tape (or holds it empty), and a tape is attached beside the notebook."""
    own_went_elsewhere: bool = False
    """The own tape records another notebook file, which exists and names that tape in its outputs: the notebook
    that stood at this path was renamed or moved, and took the tape along."""


@dataclass(frozen=True, slots=True)
class Decision:
    identity: Identity
    tape: str
    """With ``OWN``, ``ATTACHED`` and ``FRESH`` the notebook's own tape; else the tape continued, forked from, or
    named by the outputs."""


def decide(evidence: Evidence) -> Decision:
    """Which tape the notebook writes, from ``evidence`` alone."""
    own, claimed = evidence.own, evidence.claimed
    if evidence.kept is not None:
        kept = own if evidence.kept == KEEP_OWN else evidence.kept
        return Decision(Identity.OWN if kept == own else Identity.CONTINUE, kept)
    if claimed is None and evidence.own_went_elsewhere:
        return Decision(Identity.FRESH, own)
    if evidence.own_has_entries:
        return Decision(Identity.OWN, own)
    if claimed is None or claimed == own:
        return Decision(Identity.ATTACHED if evidence.attached else Identity.OWN, own)
    if not evidence.claimed_exists:
        return Decision(Identity.ATTACHED, own) if evidence.attached else Decision(Identity.FOREIGN, claimed)
    if evidence.claimed_elsewhere:
        return Decision(Identity.FORK, claimed)
    return Decision(Identity.CONTINUE, claimed)
