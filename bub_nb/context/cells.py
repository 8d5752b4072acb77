"""A strategy that shows the model the notebook cells run in this phase (from ``%tape record on``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from bub_nb.context.strategies import LastAnchor, Selection
from bub_nb.errors import ContextError
from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.events import NOTEBOOK_CELL, retracted_ids

if TYPE_CHECKING:
    from bub_nb.tape import Tape


def cell_message(entry: TapeEntry) -> TapeEntry:
    """A recorded cell as a user message with the same id, so views can still point back to it."""
    data = entry.payload.get("data") or {}
    error = f"\nIt failed with {data['error']}" if data.get("error") else ""
    content = f"[Notebook cell {data.get('cell')} ran]\n```python\n{data.get('source', '')}\n```{error}"
    return TapeEntry(entry.id, "message", {"role": "user", "content": content}, entry.meta, entry.date)


@dataclass(frozen=True, slots=True)
class NotebookCells:
    """The last-anchor view, plus the most recent ``max_cells`` recorded cells where they happened."""

    max_cells: int = 10

    def __post_init__(self) -> None:
        if self.max_cells < 1:
            raise ContextError(f"The notebook mode needs at least one cell, got {self.max_cells!r}")

    @property
    def label(self) -> str:
        # The label is what a run event records; replay reads it back as a mode, so it keeps the count.
        return "notebook" if self.max_cells == 10 else f"notebook:{self.max_cells}"

    def select(self, tape: Tape) -> Selection:
        base = LastAnchor().select(tape)
        retracted = retracted_ids(base.entries)  # a retracted cell is left out, like any retracted entry
        cell_ids = [
            e.id
            for e in base.entries
            if e.kind == "event" and e.payload.get("name") == NOTEBOOK_CELL and e.id not in retracted
        ]
        shown = set(cell_ids[-self.max_cells :])
        entries = tuple(cell_message(e) if e.id in shown else e for e in base.entries)
        return Selection(entries, base.anchor, base.last)
