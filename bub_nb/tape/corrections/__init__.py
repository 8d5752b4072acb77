"""Taking back what a tape holds: retraction (an event views obey) and redaction (the one rewrite, for secrets)."""

from __future__ import annotations

from bub_nb.tape.corrections.redaction import Redaction, marker
from bub_nb.tape.corrections.retraction import RETRACTABLE, parse_span, retraction
from bub_nb.tape.corrections.taking_back import TakingBack

__all__ = ["RETRACTABLE", "Redaction", "TakingBack", "marker", "parse_span", "retraction"]
