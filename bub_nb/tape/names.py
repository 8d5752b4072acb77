"""Names bub_nb keeps for itself: anchor names only the memory zone writes, files only the store writes."""

from __future__ import annotations

from typing import Final

from bub_nb.errors import AnchorNameError, TapeNameError
from bub_nb.tape.entries import MEMORY_ANCHOR_PREFIX

RESERVED_ANCHOR_PREFIXES: Final = (MEMORY_ANCHOR_PREFIX,)
"""A handoff under these prefixes would forge what the memory zone writes (``memory/open``, ``memory/seal``)."""

LINEAGE_TAPE_NAME: Final = "session_graph"
"""``session_graph.jsonl`` holds fork lineage, not entries."""

LINEAGE_FILE: Final = f"{LINEAGE_TAPE_NAME}.jsonl"
"""The file beside the tapes of a folder that records which tape was forked from which."""

SIDECAR_SUFFIXES: Final = (".idx", ".lock", ".bak")
"""What the store puts after ``<name>.jsonl``: its index, its lock and archives."""


def check_handoff_name(name: object) -> str:
    """``name`` if a handoff may write an anchor with it; an :class:`AnchorNameError` naming the rule otherwise."""
    if not isinstance(name, str) or not name.strip():
        raise AnchorNameError(f"Anchor name {name!r} must be a non-empty string")
    for prefix in RESERVED_ANCHOR_PREFIXES:
        if name.strip().lower().startswith(prefix):
            raise AnchorNameError(
                f"Anchor name {name!r} is reserved: names starting with {prefix!r} belong to the memory zone; "
                "use %memory (or the memory.* tools) to change memory, and another name for a handoff"
            )
    return name


def check_tape_file_name(name: str) -> str:
    """``name`` unless ``<name>.jsonl`` would be, or look like, a file the store keeps for itself."""
    lowered = name.lower()
    if lowered == LINEAGE_TAPE_NAME:
        raise TapeNameError(f"Tape name {name!r} is reserved: {LINEAGE_TAPE_NAME}.jsonl holds fork lineage, not a tape")
    if ".jsonl." in lowered or lowered.endswith((".jsonl", *SIDECAR_SUFFIXES)):
        raise TapeNameError(
            f"Tape name {name!r} is reserved: its files would pass for the store's own "
            f"(<name>.jsonl{', <name>.jsonl'.join(SIDECAR_SUFFIXES)}); "
            "choose a name without '.jsonl', '.idx', '.lock' or '.bak'"
        )
    return name
