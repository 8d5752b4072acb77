"""A reset under a running turn: the turn so far moves onto the new tape, so every id it reports is there."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from bub_nb.tape import TapeEntry

if TYPE_CHECKING:
    from bub_nb.tape import Tape


class CarriesOverReset:
    """What a turn's recorder does when one of its tools starts the tape over (a reset, always archived when a
    model asks for it): the reset's entries join the turn, then the turn's own entries so far, copied."""

    tape: Tape
    run_id: str
    entries: list[TapeEntry]
    finished: Any
    _lock: threading.RLock

    if TYPE_CHECKING:

        def _write(self, *entries: TapeEntry) -> None: ...

        def written_by_tools(self, entries: Iterable[TapeEntry]) -> None: ...

    def tools_wrote(self, before: int) -> None:
        """What the tools appended since the tape's last id was ``before`` joins the turn; when a tool started
        the tape over, the turn so far moves onto the new tape (:meth:`carry_over_reset`)."""
        if self.reset_under_it():
            self.carry_over_reset(self.tape.read(1))
        elif self.tape.last_id != before:
            self.written_by_tools(self.tape.read(before + 1))

    def reset_under_it(self) -> bool:
        """Whether the tape was started over since the turn began: its first entry is no longer where it was."""
        first = next((e for e in self.entries if e.meta.get("run_id") == self.run_id), None)
        if first is None:
            return False
        found = self.tape.read(first.id, first.id + 1)
        return not found or found[0].meta.get("run_id") != self.run_id or found[0].kind != first.kind

    def carry_over_reset(self, written: Iterable[TapeEntry]) -> None:
        """After a reset (archived, so nothing is lost) the turn goes on on the new tape.

        ``written`` is what the reset and the tools wrote there; the turn's own entries so far (its
        system prompt, the prompt, earlier tool steps) are copied after them, ``meta.carried`` naming
        each one's id in the archive, so the prompt is still in the view, the turn can be rebuilt, and
        every id the turn reports is on the tape it now writes.
        """
        with self._lock:
            if self.finished is not None:
                return
            own = [e for e in self.entries if e.meta.get("run_id") == self.run_id and e.kind != "anchor"]
            self.entries = list(written)
            self._write(*(TapeEntry(0, e.kind, e.payload, {**e.meta, "carried": e.id}) for e in own))
