"""Several agents in one notebook: each on its own tape, handoffs between them, and who holds the conversation."""

from __future__ import annotations

from bub_nb.agent.team.agent_handoff import AgentHandoff, handoff_record
from bub_nb.agent.team.ownership import Ownership, Passing, check_may_run, handed_away, holder, passings
from bub_nb.agent.team.team import Team, holder_on_tapes
from bub_nb.tape.events import CONTEXT_HANDOFF, HANDOFF_FAILED

__all__ = [
    "CONTEXT_HANDOFF",
    "HANDOFF_FAILED",
    "AgentHandoff",
    "Ownership",
    "Passing",
    "Team",
    "check_may_run",
    "handed_away",
    "handoff_record",
    "holder",
    "holder_on_tapes",
    "passings",
]
