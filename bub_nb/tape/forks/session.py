"""Forked sessions: the entries a session forked onto a tape of its own starts with, and the copy that writes them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from bub_nb.errors import BubNbError, TapeError
from bub_nb.tape.anchors import AnchorSummary
from bub_nb.tape.entries import TapeEntry, is_phase_anchor
from bub_nb.tape.events import HANDOFF, handoff_entries
from bub_nb.tape.forks.renumber import renumber
from bub_nb.tape.names import entry_address, validate_tape_name
from bub_nb.tape.seams import MemoryZone
from bub_nb.tape.stores.lineage import keep_lineage
from bub_nb.tape.stores.protocol import StoreStats, TapeStore

INTENTION_ANCHOR = "intention"


def check_fork(store: TapeStore, new_name: str, intention: object) -> None:
    """Refuse a fork into a bad or taken name, or with an intention that is neither text nor a mapping."""
    validate_tape_name(new_name)
    if store.exists(new_name):
        raise TapeError(f"Tape {new_name!r} already exists; fork into a new name")
    if intention is not None and not isinstance(intention, str | Mapping):
        raise TapeError(f"A fork's intention must be text or a mapping, got {intention!r}")


def forked_entries(
    parent: str,
    copied: Sequence[TapeEntry],
    intention: Mapping[str, Any] | str | None,
    *,
    first_id: int | None = None,
) -> list[TapeEntry]:
    """The entries a session forked from ``parent`` starts with: ``copied``, each marked ``forked_from``,
    and an ``intention`` handed off right after the last phase anchor copied, carrying that anchor's state.

    So the fork's first view holds the anchor's state, the intention and the conversation since the anchor.
    With ``first_id`` (the id the first of them will get) the ids the copies cite and their turns recorded
    are renumbered to the fork's ids.
    """
    copies = [
        TapeEntry(0, e.kind, e.payload, {**e.meta, "forked_from": entry_address(parent, e.id)}, e.date) for e in copied
    ]
    entries = _with_intention(parent, copied, copies, intention)
    if first_id is None:
        return entries
    positions = {id(entry): index for index, entry in enumerate(entries)}
    ids = {old.id: first_id + positions[id(new)] for old, new in zip(copied, copies, strict=True)}
    return renumber(entries, ids, parent)


def _with_intention(
    parent: str, copied: Sequence[TapeEntry], copies: list[TapeEntry], intention: Mapping[str, Any] | str | None
) -> list[TapeEntry]:
    entries = list(copies)
    if intention is None:
        return entries
    base = next((i for i in range(len(copied) - 1, -1, -1) if _phase_anchor(copied[i])), None)
    state = dict(copied[base].payload.get("state") or {}) if base is not None else {}
    state.update({"next_steps": intention} if isinstance(intention, str) else intention)
    meta = {"forked_at": entry_address(parent, copied[base].id)} if base is not None else {}
    at = base + 1 if base is not None else len(entries)
    if at < len(copied) and copied[at].kind == "event" and copied[at].name == HANDOFF:
        at += 1  # the anchor's own handoff record stays with it
    entries[at:at] = handoff_entries(INTENTION_ANCHOR, state, **meta)
    return entries


def _phase_anchor(entry: TapeEntry) -> bool:
    return entry.kind == "anchor" and is_phase_anchor(entry.name)


class _Parent(Protocol):
    """The tape a session is forked from (a ``Tape``)."""

    name: str

    @property
    def base_store(self) -> TapeStore: ...

    @property
    def memory(self) -> MemoryZone: ...

    def find_anchor(self, name: str) -> AnchorSummary: ...

    def read(self, start: int = 1, stop: int | None = None, kinds: Sequence[str] = ()) -> list[TapeEntry]: ...


class _Child(Protocol):
    """The new tape a forked session continues on (a ``Tape``)."""

    name: str

    def extend(self, entries: Sequence[TapeEntry]) -> list[TapeEntry]: ...

    def ensure_bootstrap_anchor(self) -> list[TapeEntry]: ...

    def stats(self) -> StoreStats: ...


def copy_session(
    parent: _Parent, child: _Child, from_anchor: str | None = None, intention: Mapping[str, Any] | str | None = None
) -> None:
    """What ``Tape.fork_session`` writes: the entries from ``from_anchor`` on, copied onto ``child``.

    With an ``intention`` the copy stops at the next phase anchor: the fork goes back to ``from_anchor``'s
    decision and tries something else from there. The ids the copies cite and their turns recorded are
    renumbered to the fork's own ids, so summaries cite and turns rebuild on the fork as on the parent.

    The fork keeps its context: the memory zone comes first when it was saved before the anchor, and an
    ``intention`` is handed off right after the phase anchor the copy continues from. The lineage is recorded
    where the store keeps it.
    """
    start = parent.find_anchor(from_anchor).id if from_anchor else 1
    stop = _phase_end(parent, start) if from_anchor and intention is not None else None
    copied = [*memory_before(parent, start), *parent.read(start, stop)]
    if intention is not None and stop is not None and (prompt := _unanswered(copied)) is not None:
        # The phase ended on a prompt whose answer came after the next anchor (an overflow's retry): copied alone
        # it would sit before the fork's first prompt, two user messages in a row. The intention carries it.
        copied = [entry for entry in copied if entry.id != prompt.id]
        text = prompt.payload.get("content")
        note = f"#{prompt.id} was not answered in this phase (its answer came after #{stop}): “{text}”"
        intention = {**({"next_steps": intention} if isinstance(intention, str) else intention), "unanswered": note}
    child.extend(forked_entries(parent.name, copied, intention, first_id=child.stats().last_id + 1))
    if intention is None:
        child.ensure_bootstrap_anchor()
    lineage = {"parent": parent.name, "child": child.name, "from_anchor": from_anchor, "from_id": start}
    keep_lineage(parent.base_store, lineage)


def _unanswered(copied: Sequence[TapeEntry]) -> TapeEntry | None:
    """The phase's last user message when nothing answered it within the phase (no reply, call or error after)."""
    for entry in reversed(copied):
        if entry.kind in ("tool_call", "tool_result", "error"):
            return None
        if entry.kind == "message":
            role = entry.payload.get("role") if isinstance(entry.payload, dict) else None
            return entry if role == "user" and isinstance(entry.payload.get("content"), str) else None
    return None


def _phase_end(tape: _Parent, start: int) -> int | None:
    """The id of the first phase anchor after ``start``: where the phase that starts there ends."""
    return next((e.id for e in tape.read(start + 1, kinds=("anchor",)) if is_phase_anchor(e.name)), None)


def memory_before(tape: _Parent, start: int) -> list[TapeEntry]:
    """The entries of the current memory zone when it lies before ``start`` (else the copy holds it)."""
    try:
        zone = tape.memory
    except BubNbError:
        return []  # the memory layer is not loaded: there is no zone to speak of
    current = next((version for version in zone.history() if version.current), None)
    if current is None or current.seal_id >= start:
        return []
    wanted = set(current.entry_ids)
    return [e for e in tape.read(current.open_id, current.seal_id + 1) if e.id in wanted]
