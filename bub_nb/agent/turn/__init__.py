"""One turn: its outcome, and the recorder that writes it on the tape as it happens (with the running turn an abort
stops)."""

from __future__ import annotations

from bub_nb.agent.turn.outcome import Turn, error_kind
from bub_nb.agent.turn.recorder import RunningTurn, TurnRecorder

__all__ = ["RunningTurn", "Turn", "TurnRecorder", "error_kind"]
