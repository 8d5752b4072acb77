"""One turn: its outcome, and the recorder that writes it on the tape as it happens."""

from __future__ import annotations

from bub_nb.agent.turn.outcome import Turn, error_kind
from bub_nb.agent.turn.recorder import TurnRecorder
from bub_nb.agent.turn.running import RunningTurn

__all__ = ["RunningTurn", "Turn", "TurnRecorder", "error_kind"]
