"""The ``tape://`` references a view's handoff anchor carries from another agent, and the entries they name.

A summary's carried lines cite entries of other tapes the same way (``[tape://<tape>/entry/<id>]``); the retention
report follows them with :func:`follow_reference`.

A handoff between agents hands the receiver references, not copies: its view holds the anchor, whose state
names the sender's entries. Expanding them is for people reading the view (``%context --expand-refs``); the
model is sent the addresses only, so no entry reaches a view twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from bub_nb.errors import BubNbError
from bub_nb.tape.events import CONTEXT_HANDOFF
from bub_nb.tape.names import TapeAddress

if TYPE_CHECKING:
    from bub_nb.context.view import View
    from bub_nb.tape import Tape, TapeEntry


@dataclass(frozen=True, slots=True)
class Reference:
    """One reference of a view's anchor: its address, and the entry it names (or why it could not be read)."""

    address: str
    entry: TapeEntry | None = None
    error: str | None = None

    @property
    def key(self) -> tuple[str, int] | None:
        """``(tape, id)`` of the entry named, so references compare with a view's own entries."""
        if self.entry is None:
            return None
        return TapeAddress.parse(self.address).tape, self.entry.id


def view_references(view: View) -> tuple[str, ...]:
    """The addresses the view's handoff anchor carries: the entries its summary cites, then the sender's anchor.

    Each address once; a view that does not start at a handoff between agents carries none.
    """
    state = view.anchor.state if view.anchor is not None else None
    record = state.get(CONTEXT_HANDOFF) if isinstance(state, dict) else None
    content = record.get("content") if isinstance(record, dict) else None
    if not isinstance(content, dict):
        return ()
    refs = content.get("refs")
    found = [*(refs if isinstance(refs, list) else []), content.get("anchor")]
    return tuple(dict.fromkeys(ref for ref in found if isinstance(ref, str)))


def expand_references(tape: Tape, view: View) -> list[Reference]:
    """Each reference of ``view`` (a view of ``tape``) with the entry it names, read where ``tape`` is stored.

    A reference that cannot be read (another role's tape, an entry gone with a reset) says why in one line.
    """
    return [follow_reference(tape, address) for address in view_references(view)]


def follow_reference(tape: Tape, address: str) -> Reference:
    """The entry ``address`` names, read where ``tape`` is stored, or why it cannot be read, in one line."""
    try:
        return Reference(address, tape.resolve(address))
    except BubNbError as exc:
        return Reference(address, error=str(exc))


def references_markdown(references: list[Reference]) -> str:
    """The references as a Markdown list, each with the entry's kind and its text (shown, never sent)."""
    from bub_nb.tape.text import entry_text

    if not references:
        return "This view's anchor carries no `tape://` references."
    lines = [f"**{len(references)} references** the view's anchor carries (shown here, not sent to the model):", ""]
    for ref in references:
        if ref.entry is None:
            lines.append(f"- `{ref.address}`: cannot be read: {ref.error}")
            continue
        text = " ".join(entry_text(ref.entry).split())
        text = text if len(text) <= 200 else text[:199] + "…"
        lines.append(f"- `{ref.address}` ({ref.entry.kind}): {text}")
    return "\n".join(lines)
