"""Redaction, the one rewrite: a secret pasted by mistake is replaced in place, everywhere it was copied.

Everything else on a tape is append-only. Redacting an entry replaces every text of its payload and meta with
``[redacted sha256:<hex>]`` (the digest of the text it replaces, so two copies can be told to be the same
without showing either), keeping what a reader needs to parse the entry: the id, kind and date, and the
structural keys (``role``, ``name``, ``type``, ``id``, ``tool_call_id``, ``run_id``). The same is done to every
copy of the entry: the archives a reset left, the tapes forked from it or that it was forked from (their
copies have other ids and are found by their text), and the same tapes in a database the home was pushed
to. Files are rewritten atomically (``stores.rewrite``). A ``redact`` event records which ids, by whom and
which copies; it holds no text of what it removed.
"""

from __future__ import annotations

import getpass
import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from bub_nb.errors import EntryNotFoundError, RetractionError, TapeError
from bub_nb.tape._lines import Record
from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.events import REDACT, id_ranges
from bub_nb.tape.stores.archive import archive_files, is_archive_name
from bub_nb.tape.stores.lineage import store_lineage
from bub_nb.tape.stores.protocol import FileBacked, TapeStore
from bub_nb.tape.stores.rewrite import rewrite_lines

#: Keys whose text a reader needs to parse an entry, or that decide ownership and lineage (a handoff between
#: agents: ``from``, ``to``, ``ownership``, ``tape_ref``); everything else that is text is redacted. A secret
#: inside one of them is reached by value (``by_value``), only where it occurs.
STRUCTURAL: Final = frozenset(
    {"role", "name", "type", "id", "tool_call_id", "run_id", "from", "to", "ownership", "tape_ref", "timestamp"}
)
_MARKER: Final = re.compile(r"^\[redacted sha256:[0-9a-f]{64}\]$")


def marker(text: str) -> str:
    """What a redacted text becomes: ``[redacted sha256:<hex digest of the text>]``."""
    return f"[redacted sha256:{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()}]"


def secret_texts(value: Any, key: str | None = None) -> set[str]:
    """The texts of ``value`` a redaction replaces: every string not under a structural key, nor a marker."""
    if isinstance(value, str):
        return set() if key in STRUCTURAL or _MARKER.match(value) else {value}
    if isinstance(value, Mapping):
        return {text for k, v in value.items() for text in secret_texts(v, k if isinstance(k, str) else None)}
    if isinstance(value, list | tuple):
        return {text for item in value for text in secret_texts(item, key)}
    return set()


def replaced(value: Any, texts: set[str], key: str | None = None) -> Any:
    """``value`` with each string of ``texts`` (outside structural keys) replaced by its marker."""
    if isinstance(value, str):
        return marker(value) if value in texts and key not in STRUCTURAL else value
    if isinstance(value, Mapping):
        return {k: replaced(v, texts, k if isinstance(k, str) else None) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [replaced(item, texts, key) for item in value]
    return value


@dataclass(frozen=True, slots=True)
class Target:
    """One entry to redact: its id, kind, and the texts of its payload and of its meta."""

    id: int
    kind: str
    payload_texts: frozenset[str]
    texts: frozenset[str]

    def copied_in(self, record: Record) -> bool:
        """Whether a line elsewhere is a copy of this entry: the same kind, holding every text of its payload."""
        if record.get("kind") != self.kind or not self.payload_texts:
            return False
        return self.payload_texts <= secret_texts(record.get("payload"))


@dataclass
class Redaction:
    """What one redaction rewrote: the ids on the tape itself, and the copies, file by file."""

    ids: list[int]
    copies: dict[str, list[int]] = field(default_factory=dict)
    database: int = 0


def targets(store: TapeStore, tape: str, ids: Iterable[int]) -> list[Target]:
    """The entries to redact, checked: each on the tape, and not redacted already. Nothing is written."""
    wanted = sorted(set(ids))
    if not wanted or any(isinstance(i, bool) or not isinstance(i, int) for i in wanted):
        raise RetractionError(f"A redaction names entry ids (whole numbers), got {wanted!r}")
    found: list[Target] = []
    for entry_id in wanted:
        entry = next(iter(store.read(tape, entry_id, entry_id + 1)), None)
        if entry is None:
            last = store.stats(tape).last_id
            raise EntryNotFoundError(f"Entry #{entry_id} is not on tape {tape!r} (last id {last})")
        texts = secret_texts(entry.payload) | secret_texts(entry.meta)
        if not texts:
            raise RetractionError(f"Entry #{entry_id} of tape {tape!r} holds no text to redact (already redacted?)")
        found.append(Target(entry.id, entry.kind, frozenset(secret_texts(entry.payload)), frozenset(texts)))
    return found


def live_name(tape: str) -> str:
    """The tape an archive (``<name>.jsonl.<stamp>.bak``) was the earlier life of; any other name as it is."""
    return tape.split(".jsonl.")[0] if is_archive_name(tape) else tape


def family(store: TapeStore, tape: str) -> set[str]:
    """The tape (an archive's live tape) and every tape linked to it by forks, either way, however far."""
    links = [(r.get("parent"), r.get("child")) for r in store_lineage(store)]
    names, grown = {live_name(tape)}, True
    while grown:
        grown = False
        for parent, child in links:
            if isinstance(parent, str) and isinstance(child, str) and (parent in names) != (child in names):
                names |= {parent, child}
                grown = True
    return names


def _change(found: list[Target], *, by_id: bool) -> Any:
    def change(record: Record) -> Record | None:
        hits = [t for t in found if (record.get("id") == t.id if by_id else t.copied_in(record))]
        if not hits:
            return None
        texts = set().union(*(t.texts for t in hits))
        new = {**record, "payload": replaced(record["payload"], texts), "meta": replaced(record.get("meta"), texts)}
        return new if new != record else None

    return change


def redact_files(store: TapeStore, tape: str, found: list[Target]) -> Redaction:
    """Rewrite the tape's file by id, then every copy in its folder: archives and the forks' files (and theirs)."""
    if not isinstance(store, FileBacked):
        raise TapeError(f"Tape {tape!r} is not kept in a file; redaction rewrites files or a database")
    own = store.path_for(tape)
    done = Redaction(rewrite_lines(own, _change(found, by_id=True)) if own.exists() else [])
    names = family(store, tape)
    others = [p for p in archive_files(Path(store.directory)) if p.name.split(".jsonl.")[0] in names]
    others += [store.path_for(name) for name in sorted(names)]
    for path in others:
        if path.exists() and path != own and (ids := rewrite_lines(path, _change(found, by_id=False))):
            done.copies[path.name] = ids
    return done


def redact_database(database: Any, names: Iterable[str], found: list[Target]) -> int:
    """Rewrite the copies in a PostgreSQL store this role pushed to: its tapes of ``names``, live and archived."""
    from bub_nb.tape.stores.postgres.redaction import redact_rows

    return redact_rows(database, names, _change(found, by_id=False))


def redact_event(done: Redaction, by: str | None) -> TapeEntry:
    """The ``redact`` event recording a redaction: which ids, by whom, and which copies (no text)."""
    copies = {name: id_ranges(sorted(set(ids))) for name, ids in done.copies.items()}
    data = {"ids": id_ranges(done.ids), "by": by or _user(), "copies": copies, "database": done.database}
    return TapeEntry.event(REDACT, data)


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"
