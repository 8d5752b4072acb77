"""What a summarising handoff's anchor state says, read defensively: a plain or hand-written state is no error."""

from __future__ import annotations

from typing import Any, Final

from bub_nb.tape.citations import cited_ids

CITING_TITLES: Final = {"summary": "Summary", "next_steps": "Next steps"}
"""The state keys whose text may cite entries, in the order they are shown, with their headings."""

CITING_KEYS: Final = tuple(CITING_TITLES)

BOOKKEEPING_KEYS: Final = ("sources", "range", "summarized_by", "uncited", "removed_citations")
"""What a summarising handoff adds beside its text, for readers and tools rather than the model."""

SUMMARY_KEYS: Final = (*CITING_KEYS, *BOOKKEEPING_KEYS)
"""Every key a summarising handoff adds to its anchor's state."""


def citing_text(state: dict[str, Any]) -> str:
    """The text of a state's citing keys, joined, for finding its citations."""
    return " ".join(value for key in CITING_KEYS if isinstance(value := state.get(key), str))


def state_sources(state: Any) -> tuple[int, ...]:
    """The entries an anchor state cites: its ``sources`` when it lists ids, else the ids its text cites.

    A plain handoff cites nothing and gets ``()``; ids that are not positive integers are left out.
    """
    if not isinstance(state, dict):
        return ()
    listed = state.get("sources")
    if isinstance(listed, list | tuple):
        return tuple(sorted({value for value in listed if type(value) is int and value > 0}))
    return tuple(cited_ids(citing_text(state)))


def state_uncited(state: Any) -> tuple[str, ...] | None:
    """The sentences an anchor state says cite nothing, or ``None`` when it does not say (a plain handoff)."""
    if not isinstance(state, dict):
        return None
    listed = state.get("uncited")
    if not isinstance(listed, list | tuple):
        return None
    return tuple(str(sentence) for sentence in listed)
