"""Bub's sidecar tapes, read as their owner's: ``<owner>__sidecar__<name>``, and the spill pointers that lead there.

Bub 0.5.1 mounts sidecars on every session tape (``bub.sidecars``); its builtin one, ``spill``, keeps a tool result
too large for the context in chunks on ``<owner>__sidecar__spill`` and puts a pointer in the owner's tool result::

    [tool output spilled: 70,000 bytes in 5 chunks; handle: 3f0c…]
    [read with: spill_read(handle='3f0c…', cursor=0, count=1, from_end=False)]
    <a preview: the head and tail of the text>

Each chunk is an anchor ``spill/<handle>/chunk/<i>`` followed by a ``tool_result`` whose one result is the chunk's
text and whose ``meta`` holds ``spill_handle`` and ``spill_chunk``; a ``spill.manifest`` event (after the anchor
``spill/<handle>/manifest``) records ``chunks``, ``bytes``, ``chars`` and ``lines``. :func:`spilled_text` joins the
chunks back into the whole result, and only when the manifest vouches for all of them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

SIDECAR_MARKER = "__sidecar__"
SPILL_SIDECAR = "spill"

SPILL_POINTER = re.compile(r"\A\[tool output spilled: [\d,]+ bytes in [\d,]+ chunks; handle: ([0-9a-f]{32})\]\n")
"""The first line of a tool result Bub spilled; its group is the handle."""


@dataclass(frozen=True, slots=True)
class Sidecar:
    """A sidecar tape's owner (the session tape it is mounted on) and its own name (``spill``)."""

    owner: str
    name: str


def sidecar_of(tape_name: str) -> Sidecar | None:
    """The owner and name of a sidecar tape, ``None`` for a tape of its own (a session's, a fork's)."""
    owner, marker, name = tape_name.partition(SIDECAR_MARKER)
    if not marker or not owner or not name:
        return None
    return Sidecar(owner, name)


def sidecar_tape_name(owner: str, name: str) -> str:
    """The tape a sidecar ``name`` of ``owner`` is kept on, as Bub names it."""
    return f"{owner}{SIDECAR_MARKER}{name}"


def owners_and_sidecars(names: Iterable[str]) -> dict[str, list[str]]:
    """The tapes of a listing, each owner with its sidecars' names: a sidecar is no session of its own. A sidecar
    whose owner is not in the listing still lists its owner, which then has only sidecars."""
    owners: dict[str, list[str]] = {}
    for name in names:
        sidecar = sidecar_of(name)
        if sidecar is None:
            owners.setdefault(name, [])
        else:
            owners.setdefault(sidecar.owner, []).append(sidecar.name)
    return owners


def spill_handle(result: Any) -> str | None:
    """The handle of a spill pointer, when ``result`` (one tool result) is one."""
    if not isinstance(result, str):
        return None
    found = SPILL_POINTER.match(result)
    return found.group(1) if found else None


def spilled_text(store: Any, owner: str, handle: str) -> str | None:
    """The whole tool result Bub spilled under ``handle`` from ``owner``'s spill sidecar in ``store``; ``None`` when
    that sidecar does not hold it whole (no manifest, a chunk missing or out of place)."""
    sidecar = sidecar_tape_name(owner, SPILL_SIDECAR)
    if not store.exists(sidecar):
        return None
    chunks: dict[int, str] = {}
    expected: int | None = None
    for entry in store.read(sidecar):
        meta = entry.meta if isinstance(entry.meta, dict) else {}
        if entry.kind == "tool_result" and meta.get("spill_handle") == handle:
            results = entry.payload.get("results")
            index = meta.get("spill_chunk")
            if type(index) is int and isinstance(results, list) and len(results) == 1 and isinstance(results[0], str):
                chunks.setdefault(index, results[0])
        elif entry.kind == "event" and entry.payload.get("name") == "spill.manifest":
            data = entry.payload.get("data")
            if isinstance(data, dict) and data.get("handle") == handle and type(data.get("chunks")) is int:
                expected = data["chunks"]
    if expected is None or sorted(chunks) != list(range(expected)):
        return None
    return "".join(chunks[index] for index in range(expected))


def resolve_spill(result: Any, store: Any, owner: str) -> Any:
    """``result`` with a spill pointer replaced by the whole text it points at; anything else as it is."""
    handle = spill_handle(result)
    if handle is None:
        return result
    whole = spilled_text(store, owner, handle)
    return result if whole is None else whole
