"""The ``Tape`` methods that take entries back: ``retract``, ``unretract``, ``retracted`` and ``redact``."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Protocol

from bub_nb.errors import TapeError
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
from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.events import RETRACT, UNRETRACT, range_ids, retracted_ids
from bub_nb.tape.stores.protocol import FileBacked, MayBeReadOnly, SearchesLines, TapeStore

if TYPE_CHECKING:
    from bub_nb.tape.stores.postgres.store import PostgresTapeStore


class _Tape(Protocol):
    name: str
    _lock: threading.RLock
    _forks: ContextVar[tuple[Any, ...]]

    @property
    def store(self) -> TapeStore: ...

    @property
    def base_store(self) -> TapeStore: ...

    def append(self, entry: TapeEntry) -> TapeEntry: ...


class TakingBack:
    """Retraction and redaction, mixed into ``Tape``; see ``bub_nb.tape.corrections`` for the rules."""

    def retract(self: _Tape, target: Target, reason: str | None = None) -> TapeEntry:
        """Take an entry (``7``) or a range (``"5-9"``) out of every view from now on; returns the ``retract`` event.

        The entries stay on the tape and a past turn's view is unchanged. A call goes with its results.
        Refused before writing: an unknown id, an anchor, an event, a backwards range, an entry already retracted.
        """
        with self._lock:
            event = self.append(retraction(self.store, self.name, target, reason=reason))
            _follow_memory(self, event)
            return event

    def unretract(self: _Tape, target: Target, reason: str | None = None) -> TapeEntry:
        """Bring retracted entries back into views from now on; returns the ``unretract`` event."""
        with self._lock:
            event = self.append(retraction(self.store, self.name, target, reason=reason, undo=True))
            _follow_memory(self, event, undo=True)
            return event

    def retracted(self: _Tape) -> frozenset[int]:
        """The ids retracted now (read from the tape's ``retract`` and ``unretract`` events)."""
        return _retracted_since(self, 1)

    def retracted_among(self: _Tape, ids: Iterable[int]) -> frozenset[int]:
        """Which of ``ids`` are retracted now. A retraction comes after what it retracts, so only the events from
        the first of them on are read (in a file, from the index's line before it on), none when there are none."""
        wanted = frozenset(ids)
        return _retracted_since(self, min(wanted)) & wanted if wanted else frozenset()

    def redact(
        self: _Tape, ids: int | Iterable[int], *, by: str | None = None, databases: Iterable[PostgresTapeStore] = ()
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


def _retracted_since(tape: _Tape, since: int) -> frozenset[int]:
    """What the ``retract`` and ``unretract`` events from the entry ``since`` on leave retracted."""
    store = tape.store
    if isinstance(store, SearchesLines):  # only the lines naming them are decoded, newest first
        found = list(store.iter_reverse_matching(tape.name, [b"retract"], since))[::-1]
    else:
        found = store.read(tape.name, since)
    return retracted_ids(e for e in found if e.kind == "event" and e.name in (RETRACT, UNRETRACT))
