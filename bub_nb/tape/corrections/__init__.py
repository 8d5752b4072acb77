"""Taking back what a tape holds: retraction (an event views obey) and redaction (the one rewrite, for secrets)."""

from __future__ import annotations

from bub_nb.tape.corrections.redaction import Redaction, marker
from bub_nb.tape.corrections.retraction import RETRACTABLE, parse_span, retraction

__all__ = ["RETRACTABLE", "Redaction", "marker", "parse_span", "retraction"]
