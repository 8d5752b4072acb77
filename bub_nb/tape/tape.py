"""The Tape: one session's append-only history and the operations Bub defines on it."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bub_nb.errors import EntryNotFoundError, TapeError
from bub_nb.tape import anchors, seams
from bub_nb.tape._lines import MAX_DEPTH, too_deep
from bub_nb.tape.anchors import LAST_ANCHOR, AnchorSummary
from bub_nb.tape.citations import check_state_citations
from bub_nb.tape.corrections.by_value import MIN_ENTRY_TEXT, TextRedaction, redact_store_text
from bub_nb.tape.corrections.redaction import (
    Redaction,
    family,
    live_name,
    marker,
    redact_database,
    redact_event,
    redact_files,
    targets,
)
from bub_nb.tape.corrections.retraction import Target, retraction
from bub_nb.tape.entries import TapeEntry, is_phase_anchor, plain_json
from bub_nb.tape.events import AGENT, RETRACT, UNRETRACT, handoff_entries, range_ids, retracted_ids
from bub_nb.tape.forks import ForkBlock, ForkedStore, check_fork, copy_session
from bub_nb.tape.info import TapeInfo, last_usage, tape_info
from bub_nb.tape.names import TapeAddress, anchor_address, check_handoff_name, entry_address
from bub_nb.tape.query import SearchResults, TapeQuery, search_entries
from bub_nb.tape.redact import redact
from bub_nb.tape.seams import MemoryZone, View
from bub_nb.tape.stores.agent_tapes import defined_agents
from bub_nb.tape.stores.lineage import store_lineage
from bub_nb.tape.stores.protocol import AnchorRef, FileBacked, MayBeReadOnly, SearchesLines, StoreStats, TapeStore
from bub_nb.tape.stores.resolve import readable_tape
from bub_nb.tape.text import entry_text

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from bub_nb.tape.stores.postgres.store import PostgresTapeStore

BOOTSTRAP_ANCHOR = "session/start"


class Tape:
    """One tape in a store. Every method reads the store afresh, so other writers are always seen."""

    def __init__(self, name: str, store: TapeStore) -> None:
        self.name = name
        self._base_store = store
        # Per context, so a fork in one asyncio task does not catch the writes of another.
        self._forks: ContextVar[tuple[ForkedStore, ...]] = ContextVar(f"bub_nb_forks_{name}", default=())
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"Tape({self.name!r}, store={self._base_store!r})"

    @property
    def store(self) -> TapeStore:
        """The store reads and writes go to: a fork's while inside ``fork()``."""
        forks = self._forks.get()
        return forks[-1] if forks else self._base_store

    @property
    def location(self) -> str:
        return self.store.stats(self.name).location

    @property
    def path(self) -> Path | None:
        """The tape file, for file-backed tapes."""
        store = self._base_store
        return store.path_for(self.name) if isinstance(store, FileBacked) else None

    @property
    def read_only(self) -> bool:
        """Whether nothing can be appended (an archive a reset left)."""
        store = self._base_store
        return isinstance(store, MayBeReadOnly) and not store.writable(self.name)

    @property
    def last_id(self) -> int:
        return self.store.stats(self.name).last_id

    def stats(self) -> StoreStats:
        return self.store.stats(self.name)

    def __len__(self) -> int:
        return self.store.stats(self.name).entries

    def __iter__(self) -> Iterator[TapeEntry]:
        return iter(self.read())

    # -- writing ----------------------------------------------------------------------------------

    def extend(self, entries: Sequence[TapeEntry]) -> list[TapeEntry]:
        """Append entries in order, secrets redacted first; returns them as stored, with ids. Payloads are stored as
        plain JSON values (tuples become lists, keys strings), so every store hands back what a file would."""
        clean = [
            TapeEntry(0, e.kind, redact(plain_json(e.payload)), redact(plain_json(e.meta)), e.date) for e in entries
        ]
        check_nesting(clean)
        return self.store.append(self.name, clean)

    def append(self, entry: TapeEntry) -> TapeEntry:
        return self.extend([entry])[0]

    def append_message(self, message: Mapping[str, Any], **meta: Any) -> TapeEntry:
        return self.append(TapeEntry.message(dict(message), **meta))

    def append_system(self, content: str, **meta: Any) -> TapeEntry:
        return self.append(TapeEntry.system(content, **meta))

    def append_event(self, name: str, data: Any = None, **meta: Any) -> TapeEntry:
        return self.append(TapeEntry.event(name, data, **meta))

    def append_tool_call(self, calls: list[dict[str, Any]], content: str | None = None, **meta: Any) -> TapeEntry:
        return self.append(TapeEntry.tool_call(calls, content, **meta))

    def append_tool_result(self, results: list[Any], **meta: Any) -> TapeEntry:
        return self.append(TapeEntry.tool_result(results, **meta))

    def append_error(self, kind: str, message: str, details: Any = None, **meta: Any) -> TapeEntry:
        return self.append(TapeEntry.error(kind, message, details, **meta))

    def handoff(self, name: str, state: Mapping[str, Any] | None = None, **meta: Any) -> list[TapeEntry]:
        """Write an anchor carrying ``state``, then a ``handoff`` event recording it.

        A state whose text cites an entry past the tape's last id is refused (a ``CitationError``).
        """
        check_handoff_name(name)
        check_state_citations(state, self.last_id)
        return self.extend(handoff_entries(name, state, **meta))

    def ensure_bootstrap_anchor(self) -> list[TapeEntry]:
        """Write ``session/start`` on a tape that has no phase anchor yet; returns what was written.

        Memory anchors do not count: a zone saved before the first turn must not leave the
        conversation without a phase to start from.
        """
        with self._lock:
            if any(is_phase_anchor(ref.name) for ref in self.store.anchors(self.name)):
                return []
            return self.handoff(BOOTSTRAP_ANCHOR, {"owner": "human"})

    def reset(self, *, archive: bool = False) -> list[TapeEntry]:
        """Start over at ``session/start`` (``archive``: keep a ``.bak``); the agents defined here are defined again."""
        if self._forks.get():
            raise TapeError(f"Tape {self.name!r} cannot be reset inside fork()")
        defined = defined_agents(self._base_store, self.name)
        archived = self._base_store.reset(self.name, archive=archive)
        written = self.handoff(BOOTSTRAP_ANCHOR, {"owner": "human", **({"archived": archived} if archived else {})})
        return written + [self.append_event(AGENT, {"name": name, **settings}) for name, settings in defined.items()]

    # -- reading ----------------------------------------------------------------------------------

    def read(self, start: int = 1, stop: int | None = None, kinds: Sequence[str] = ()) -> list[TapeEntry]:
        """Entries with ``start <= id < stop``, oldest first, optionally of some kinds only."""
        return anchors.of_kinds(self.store.read(self.name, start, stop), kinds)

    def iter_reverse(self, kinds: Sequence[str] = ()) -> Iterator[TapeEntry]:
        """Entries newest first, read lazily from the end."""
        for entry in self.store.iter_reverse(self.name):
            if not kinds or entry.kind in kinds:
                yield entry

    def get(self, entry_id: int) -> TapeEntry:
        found = self.store.read(self.name, entry_id, entry_id + 1)
        if not found:
            raise EntryNotFoundError(f"Entry {entry_id!r} is not on tape {self.name!r} (last id {self.last_id})")
        return found[0]

    def _summary(self, ref: AnchorRef) -> AnchorSummary:
        found = self.store.read(self.name, ref.id, ref.id + 1)
        entry = found[0] if found else TapeEntry(ref.id, "anchor", {"name": ref.name})
        state = entry.payload.get("state")
        return AnchorSummary(ref.id, ref.name, state if isinstance(state, dict) else None, entry.date)

    def anchors(self, limit: int | None = 20) -> list[AnchorSummary]:
        """The last ``limit`` anchors (all with ``None``), oldest first."""
        refs = self.store.anchors(self.name)
        if limit is not None:
            refs = refs[len(refs) - limit :] if 0 < limit < len(refs) else refs if limit > 0 else []
        return [self._summary(ref) for ref in refs]

    def anchor_names(self) -> list[str]:
        return [ref.name for ref in self.store.anchors(self.name)]

    def _last_ref(self, *, phase: bool = True) -> AnchorRef | None:
        return anchors.last_ref(self.store, self.name, phase=phase)

    def _find_ref(self, name: str) -> AnchorRef:
        return anchors.find_ref(self.store, self.name, name)

    def last_anchor(self, *, phase: bool = True) -> AnchorSummary | None:
        """The newest anchor; with ``phase`` the newest that starts a phase (not ``memory/...``)."""
        ref = self._last_ref(phase=phase)
        return None if ref is None else self._summary(ref)

    def find_anchor(self, name: str) -> AnchorSummary:
        """The last anchor called ``name``."""
        return self._summary(self._find_ref(name))

    def from_last_anchor(self, kinds: Sequence[str] = ()) -> list[TapeEntry]:
        """Entries after the last phase anchor (all entries when there is none). ``memory/...`` anchors do not start
        a phase, so a memory save does not cut this slice."""
        return anchors.of_kinds(anchors.from_last_anchor(self.store, self.name), kinds)

    def after_anchor(self, name: str, kinds: Sequence[str] = ()) -> list[TapeEntry]:
        """Entries after the last anchor called ``name``."""
        return anchors.of_kinds(anchors.after_anchor(self.store, self.name, name), kinds)

    def between_anchors(self, start: str, end: str, kinds: Sequence[str] = ()) -> list[TapeEntry]:
        """Entries after the last ``start`` anchor and before the last ``end`` anchor."""
        return anchors.of_kinds(anchors.between_anchors(self.store, self.name, start, end), kinds)

    def search(self, query: str, limit: int | None = 20) -> SearchResults:
        """Entries whose text contains ``query`` (case-insensitive), newest first: the ``limit`` newest (all
        with ``None``). The list's ``cut`` says whether more entries matched than it holds."""
        return search_entries(self.query().text(query).newest_first(), limit)

    def query(self) -> TapeQuery:
        return TapeQuery(self)

    def last_usage(self) -> dict[str, Any] | None:
        """The token usage of the newest ``run`` event, if one is recent."""
        return last_usage(self)

    def info(self) -> TapeInfo:
        return tape_info(self)

    # -- forks and addresses ----------------------------------------------------------------------

    @property
    def base_store(self) -> TapeStore:
        """The store this tape lives in, whatever fork is open."""
        return self._base_store

    def fork(self, merge_back: bool = True) -> ForkBlock:
        """Send writes aside for the block; on exit merge them back in order, or drop them."""
        return ForkBlock(self._forks, self.store, self.name, merge_back)

    def fork_session(
        self, new_name: str, from_anchor: str | None = None, intention: Mapping[str, Any] | str | None = None
    ) -> Tape:
        """Copy the entries from ``from_anchor`` on into a new tape that continues on its own.

        The fork keeps its context: this tape's memory zone comes first when it was saved before the
        anchor, and an ``intention`` is handed off right after the phase anchor the copy continues from (with
        an intention the copy stops at the next phase anchor). The ids the copies name are renumbered.
        The lineage is recorded where the store keeps it.
        """
        if from_anchor:
            self.find_anchor(from_anchor)  # an unknown anchor is refused before the new tape exists
        check_fork(self.store, new_name, intention)
        child = type(self)(new_name, self._base_store)
        copy_session(self, child, from_anchor, intention)
        return child

    def lineage(self) -> list[dict[str, Any]]:
        """Forks recorded for this tape's store (its folder's lineage file, or the database) that involve it."""
        records = store_lineage(self._base_store)
        return [r for r in records if self.name in (r.get("parent"), r.get("child"))]

    def address(self, entry: TapeEntry | int) -> str:
        return entry_address(self.name, entry if isinstance(entry, int) else entry.id)

    def anchor_address(self, name: str) -> str:
        return anchor_address(self.name, name)

    def resolve(self, address: str) -> TapeEntry:
        """The entry a ``tape://`` address points to; other tapes are looked up in the same store."""
        parsed = TapeAddress.parse(address)
        same = parsed.tape == self.name
        tape = self if same else Tape(readable_tape(self._base_store, parsed.tape, address), self._base_store)
        return tape.get(int(parsed.target) if parsed.kind == "entry" else tape._find_ref(parsed.target).id)

    def view(self, mode: Any = LAST_ANCHOR) -> View:
        """What the model would see now; see ``bub_nb.context.build_view``."""
        return seams.view(self, mode)

    def view_of_turn(self, run: int | str = -1) -> View:
        """The request a recorded turn sent, rebuilt message for message; see ``bub_nb.context.view_of_turn``.

        ``run`` is a run id, the entry id of a ``run`` event, or a position (``-1`` the last turn).
        """
        return seams.view_of_turn(self, run)

    @property
    def memory(self) -> MemoryZone:
        """The memory zone on this tape (``bub_nb.memory.MemoryZone``)."""
        return seams.memory(self)

    def to_frame(self) -> pd.DataFrame:
        """One row per entry, with flattened columns; see ``bub_nb.tape.frames.frame``."""
        from bub_nb.tape.frames.frame import tape_to_frame

        return tape_to_frame(self)

    def to_arrow(self) -> pa.Table:
        """``to_frame()``'s columns as a ``pyarrow.Table`` (the ``arrow`` extra); see ``bub_nb.tape.frames.arrow``."""
        from bub_nb.tape.frames.native import tape_to_arrow

        return tape_to_arrow(self)

    def text(self, entry: TapeEntry) -> str:
        return entry_text(entry)

    def _repr_html_(self) -> str:
        return self.info()._repr_html_()

    # -- taking entries back: retraction (an event views obey) and redaction (the one rewrite) -----------

    def retract(self, target: Target, reason: str | None = None) -> TapeEntry:
        """Take an entry (``7``) or a range (``"5-9"``) out of every view from now on; returns the ``retract`` event.

        The entries stay on the tape and a past turn's view is unchanged. A call goes with its results.
        Refused before writing: an unknown id, an anchor, an event, a backwards range, an entry already retracted.
        """
        with self._lock:
            event = self.append(retraction(self.store, self.name, target, reason=reason))
            _follow_memory(self, event)
            return event

    def unretract(self, target: Target, reason: str | None = None) -> TapeEntry:
        """Bring retracted entries back into views from now on; returns the ``unretract`` event."""
        with self._lock:
            event = self.append(retraction(self.store, self.name, target, reason=reason, undo=True))
            _follow_memory(self, event, undo=True)
            return event

    def retracted(self) -> frozenset[int]:
        """The ids retracted now (read from the tape's ``retract`` and ``unretract`` events)."""
        return _retracted_since(self, 1)

    def retracted_among(self, ids: Iterable[int]) -> frozenset[int]:
        """Which of ``ids`` are retracted now. A retraction comes after what it retracts, so only the events from
        the first of them on are read (in a file, from the index's line before it on), none when there are none."""
        wanted = frozenset(ids)
        return _retracted_since(self, min(wanted)) & wanted if wanted else frozenset()

    def redact(
        self, ids: int | Iterable[int], *, by: str | None = None, databases: Iterable[PostgresTapeStore] = ()
    ) -> TapeEntry:
        """Replace the text of entries in place, in this tape and every copy of them, for a secret pasted by mistake.

        The one rewrite bub_nb makes: ids, kinds and dates stay; the text becomes ``[redacted sha256:…]`` in the
        tape's file, its archives, the tapes forked from it or it from, and in ``databases`` (PostgreSQL stores
        the home was pushed to). Each of the entries' texts long enough not to be a common word is then redacted
        by value across the home or store (``corrections.by_value``), so a summary or another agent's tape that
        quoted it is reached. Returns the ``redact`` event written afterwards, which names the ids and copies;
        on an archive (opened read-only) the ids are the archive's, and the event goes on its live tape.
        """
        if self._forks.get():
            raise TapeError(f"Tape {self.name!r} cannot be redacted inside fork()")
        store = self.base_store
        with self._lock:
            found = targets(store, self.name, [ids] if isinstance(ids, int) else ids)
            names = family(store, self.name)
            if isinstance(store, FileBacked):
                done = redact_files(store, self.name, found)
            elif hasattr(store, "query") and hasattr(store, "owner_and_name"):  # the database store
                done = Redaction([t.id for t in found])
                done.database = redact_database(store, names, found)
            else:
                raise TapeError(f"Tape {self.name!r} lives in {store!r}; redaction rewrites files or a database")
            for database in databases:
                done.database += redact_database(database, names, found)
            # Then each text by value, so what quoted it is reached too: summaries, other agents' tapes.
            texts = sorted({text for t in found for text in t.texts if len(text.strip()) >= MIN_ENTRY_TEXT})
            for text in texts:
                for each in (store, *databases):
                    by_value = TextRedaction(marker(text), len(text))
                    redact_store_text(each, text, by_value, by, None, copies=each is not store)
                    for place, ids in by_value.files.items():
                        done.copies.setdefault(place, []).extend(ids)
            if isinstance(store, MayBeReadOnly) and not store.writable(self.name):  # an archive: its live tape
                return store.append(live_name(self.name), [redact_event(done, by)])[0]  # records it
            return self.append(redact_event(done, by))


def _follow_memory(tape: Any, event: TapeEntry, *, undo: bool = False) -> None:
    """A retracted memory note leaves the memory zone too (a new zone, as every memory change is), so the next
    system prompt and the ``memory.*`` tools follow; reading memory stays within its zone."""
    ids = range_ids(event.payload["data"]["ids"]) or ()
    notes = [
        entry
        for first, last in event.payload["data"]["ids"]
        for entry in tape.read(first, last + 1)
        if entry.kind == "event" and (entry.name or "").startswith("memory.") and entry.id in ids
    ]
    if notes:
        tape.memory.retracted_notes(notes, undo=undo)


def _retracted_since(tape: Tape, since: int) -> frozenset[int]:
    """What the ``retract`` and ``unretract`` events from the entry ``since`` on leave retracted."""
    store = tape.store
    if isinstance(store, SearchesLines):  # only the lines naming them are decoded, newest first
        found = list(store.iter_reverse_matching(tape.name, [b"retract"], since))[::-1]
    else:
        found = store.read(tape.name, since)
    return retracted_ids(e for e in found if e.kind == "event" and e.name in (RETRACT, UNRETRACT))


def check_nesting(entries: Sequence[TapeEntry]) -> None:
    """Refuse, before anything is written, an entry whose line would nest past :data:`MAX_DEPTH`: no reader would
    take it back (a ``TapeError``, one line)."""
    for entry in entries:
        if too_deep(entry.to_line()):
            raise TapeError(
                f"A {entry.kind!r} entry nests its values more than {MAX_DEPTH} levels deep, which no tape reader "
                "takes back; nothing was written"
            )
