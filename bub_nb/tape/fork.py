"""Forks: writes that go aside until they are merged back, and new sessions forked from an anchor."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jsonlines
import orjson

from bub_nb.errors import BubNbError, TapeError
from bub_nb.tape import extensions
from bub_nb.tape.address import entry_address
from bub_nb.tape.entries import TapeEntry, is_phase_anchor, utc_now
from bub_nb.tape.lines import anchor_name
from bub_nb.tape.naming import validate_tape_name
from bub_nb.tape.store import AnchorRef, StoreStats, TapeStore

if TYPE_CHECKING:
    from bub_nb.tape.service import Tape

INTENTION_ANCHOR = "intention"


class ForkedStore:
    """A store for one tape that reads through to its parent and keeps its own writes aside.

    Entries written here get provisional ids after the parent's last id; merging appends them to
    the parent in order, which gives them their final ids.
    """

    def __init__(self, parent: TapeStore, tape: str) -> None:
        self.parent = parent
        self.tape = tape
        self.base_id = parent.stats(tape).last_id
        self.entries: list[TapeEntry] = []
        self._lock = threading.Lock()

    def _own(self, tape: str) -> bool:
        return tape == self.tape

    def list_tapes(self) -> list[str]:
        return self.parent.list_tapes()

    def exists(self, tape: str) -> bool:
        return self.parent.exists(tape) or (self._own(tape) and bool(self.entries))

    def append(self, tape: str, entries: Sequence[TapeEntry]) -> list[TapeEntry]:
        if not self._own(tape):
            return self.parent.append(tape, entries)
        with self._lock:
            first = self.base_id + len(self.entries) + 1
            stored = [entry.with_id(first + i) for i, entry in enumerate(entries)]
            self.entries.extend(stored)
            return stored

    def read(self, tape: str, start: int = 1, stop: int | None = None) -> list[TapeEntry]:
        if not self._own(tape):
            return self.parent.read(tape, start, stop)
        parent_stop = self.base_id + 1 if stop is None else min(stop, self.base_id + 1)
        head = self.parent.read(tape, start, parent_stop) if start < parent_stop else []
        return head + [e for e in self.entries if e.id >= start and (stop is None or e.id < stop)]

    def iter_reverse(self, tape: str) -> Iterator[TapeEntry]:
        if not self._own(tape):
            yield from self.parent.iter_reverse(tape)
            return
        yield from reversed(list(self.entries))
        for entry in self.parent.iter_reverse(tape):
            if entry.id <= self.base_id:
                yield entry

    def anchors(self, tape: str) -> Sequence[AnchorRef]:
        if not self._own(tape):
            return self.parent.anchors(tape)
        base = [a for a in self.parent.anchors(tape) if a.id <= self.base_id]
        return [*base, *(AnchorRef(e.id, anchor_name(e.payload)) for e in self.entries if e.kind == "anchor")]

    def stats(self, tape: str) -> StoreStats:
        stats = self.parent.stats(tape)
        if not self._own(tape) or not self.entries:
            return stats
        return replace(stats, entries=stats.entries + len(self.entries), last_id=self.entries[-1].id)

    def reset(self, tape: str, *, archive: bool = False) -> str | None:
        return self.parent.reset(tape, archive=archive)

    def merge(self) -> list[TapeEntry]:
        """Append the forked entries to the parent, in order; returns them with their final ids."""
        with self._lock:
            pending, self.entries = self.entries, []
        return self.parent.append(self.tape, [e.with_id(0) for e in pending]) if pending else []


class ForkBlock:
    """``tape.fork()``: a sync and an async context manager that sends the tape's writes aside.

    Forks are kept per context (a ``ContextVar``), so a fork in one asyncio task does not catch the
    writes of another.
    """

    def __init__(
        self, forks: ContextVar[tuple[ForkedStore, ...]], store: TapeStore, tape: str, merge_back: bool
    ) -> None:
        self._forks, self._store, self._tape, self._merge_back = forks, store, tape, merge_back

    def __enter__(self) -> ForkedStore:
        self.fork = ForkedStore(self._store, self._tape)
        self._token = self._forks.set((*self._forks.get(), self.fork))
        return self.fork

    def __exit__(self, *exc: object) -> None:
        self._forks.reset(self._token)
        if self._merge_back:
            self.fork.merge()

    async def __aenter__(self) -> ForkedStore:
        return self.__enter__()

    async def __aexit__(self, *exc: object) -> None:
        self.__exit__(*exc)


def fork_session(
    parent: Tape, new_name: str, start: int, from_anchor: str | None, intention: Mapping[str, Any] | str | None
) -> Tape:
    """A new tape holding ``parent``'s entries from id ``start`` on, its intention, and its lineage.

    The fork keeps its context: the parent's memory zone comes first when it was saved before
    ``start``, and an intention is handed off right after the phase anchor the copy continues from,
    carrying that anchor's state, so the fork's first view holds the anchor's state, the intention
    and the conversation since the anchor.
    """
    validate_tape_name(new_name)
    if parent.store.exists(new_name):
        raise TapeError(f"Tape {new_name!r} already exists; fork into a new name")
    if intention is not None and not isinstance(intention, str | Mapping):
        raise TapeError(f"A fork's intention must be text or a mapping, got {intention!r}")
    copied = [*_memory_before(parent, start), *parent.read(start)]
    entries = [
        TapeEntry(0, e.kind, e.payload, {**e.meta, "forked_from": entry_address(parent.name, e.id)}, e.date)
        for e in copied
    ]
    if intention is not None:
        base = next((i for i in range(len(copied) - 1, -1, -1) if _phase_anchor(copied[i])), None)
        state = dict(copied[base].payload.get("state") or {}) if base is not None else {}
        state.update({"next_steps": intention} if isinstance(intention, str) else intention)
        meta = {"forked_at": entry_address(parent.name, copied[base].id)} if base is not None else {}
        at = base + 1 if base is not None else len(entries)
        if at < len(copied) and copied[at].kind == "event" and copied[at].name == "handoff":
            at += 1  # the anchor's own handoff record stays with it
        entries[at:at] = [
            TapeEntry.anchor(INTENTION_ANCHOR, state, **meta),
            TapeEntry.event("handoff", {"name": INTENTION_ANCHOR, "state": state}, **meta),
        ]
    child = type(parent)(new_name, parent.base_store)
    child.extend(entries)
    if intention is None:
        child.ensure_bootstrap_anchor()
    lineage = {"parent": parent.name, "child": new_name, "from_anchor": from_anchor, "from_id": start}
    directory = getattr(parent.base_store, "directory", None)
    keep = getattr(parent.base_store, "record_lineage", None)  # a database keeps lineage itself
    if keep is not None:
        keep({**lineage, "date": utc_now()})
    elif directory is not None:
        record_lineage(Path(directory), lineage)
    return child


def _phase_anchor(entry: TapeEntry) -> bool:
    return entry.kind == "anchor" and is_phase_anchor(entry.name)


def _memory_before(parent: Tape, start: int) -> list[TapeEntry]:
    """The entries of the parent's current memory zone when it lies before ``start`` (else it is copied anyway)."""
    try:
        zone = extensions.require("memory")(parent)
    except BubNbError:
        return []  # the memory layer is not loaded: there is no zone to speak of
    current = next((version for version in zone.history() if version.current), None)
    if current is None or current.seal_id >= start:
        return []
    wanted = set(current.entry_ids)
    return [e for e in parent.read(current.open_id, current.seal_id + 1) if e.id in wanted]


def record_lineage(directory: Path, record: dict[str, Any]) -> None:
    """Append one fork to ``session_graph.jsonl`` under the tapes home."""
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    line = orjson.dumps({**record, "date": utc_now()}, option=orjson.OPT_APPEND_NEWLINE, default=str)
    fd = os.open(directory / "session_graph.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line)  # one write per record, so concurrent forks never interleave
    finally:
        os.close(fd)


def read_lineage(directory: Path) -> list[dict[str, Any]]:
    """Every fork recorded under ``directory``; lines another tool left broken are skipped."""
    path = directory / "session_graph.jsonl"
    if not path.exists():
        return []
    with jsonlines.open(path, loads=orjson.loads) as reader:
        return list(reader.iter(type=dict, skip_invalid=True))
