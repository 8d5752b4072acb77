"""``import_log``: another agent's log written as a new tape, every record accounted for."""

from __future__ import annotations

import contextlib
import gc
import re
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bub_nb.errors import LogImportError, TapeNameError
from bub_nb.imports import claude_code, codex
from bub_nb.imports.draft import SOURCE, TapeDraft
from bub_nb.imports.formats import FORMATS, detect_format, read_log
from bub_nb.imports.report import ImportReport
from bub_nb.tape import Tape, TapeEntry, TapeStore, open_tape, validate_tape_name
from bub_nb.tape.entries import plain_json
from bub_nb.tape.names import entry_address
from bub_nb.tape.redact import redact
from bub_nb.tape.stores.protocol import CopiesEntries

_NAME_CHARACTERS = re.compile(r"[^A-Za-z0-9._-]+")


def import_log(
    path: str | Path,
    format: str | None = None,
    *,
    name: str | None = None,
    home: str | Path | None = None,
    store: TapeStore | str | None = None,
    replace: bool = False,
) -> ImportReport:
    """Write the log at ``path`` as a new tape in Bub's format; the report says what became of every record.

    ``format`` is one of :data:`FORMATS` (told from the file when not given). The tape is ``name``, or
    ``<format>__<session id>``; it must not hold entries yet, since an import never writes into a tape
    that has a history of its own, unless ``replace``: then a tape that holds entries is archived as a reset
    archives it (``<name>.jsonl.<stamp>.bak``, in ``archived``) and the log written afresh in its place. Nothing
    is written or archived unless the whole log was read. ``home`` and ``store`` choose where the tape goes, as
    for :func:`bub_nb.open_tape`.
    """
    source = Path(path).expanduser()
    if not source.is_file():
        raise LogImportError(f"Log {str(path)!r} is not a file")
    if format is not None and format not in FORMATS:
        raise LogImportError(f"Format {format!r} is not one an import reads; the formats: {', '.join(FORMATS)}")
    chosen = format or detect_format(source)
    # A log whose records carry no time at all is dated by the file's own time, never by the import's.
    written = datetime.fromtimestamp(source.stat().st_mtime, UTC).isoformat()
    draft = TapeDraft(chosen, fallback_date=written)
    with _collector_paused():
        session = read_log(chosen, source, draft)
        entries = draft.finish()
    tape_name = _tape_name(name, chosen, session, source)
    tape = open_tape(tape_name, home=home, store=store)
    if len(tape) and not replace:
        raise LogImportError(
            f"Tape {tape_name!r} already holds {len(tape)} entries; an import writes a new tape, so name another"
        )
    heading = {"format": chosen, "path": str(source.resolve()), "records": len(draft.raw), **session}
    branch = _branched_from(chosen, source, session)
    if branch is not None:
        heading["branched_from"] = branch
    first = entries[0].date if entries else datetime.now().astimezone().isoformat()
    entries = [TapeEntry(0, "event", {"name": SOURCE, "data": heading}, {"source": chosen, "records": []}, first)]
    entries += draft.entries
    _check_dates(entries)
    archived = None
    if len(tape):
        archived = tape.base_store.reset(tape.name, archive=True)
        tape = open_tape(tape_name, home=home, store=store)
    with _collector_paused():
        stored = _write(tape, entries)
    dates = sorted((datetime.fromisoformat(entry.date), entry.date) for entry in stored)
    return ImportReport(
        tape=tape.name,
        location=tape.location,
        format=chosen,
        source=str(source),
        records=len(draft.raw),
        mapped=draft.mapped,
        kept=len(draft.kept_records),
        entries=len(stored),
        kinds=dict(Counter(entry.kind for entry in stored)),
        kept_types=dict(draft.kept),
        first_date=dates[0][1] if dates else None,
        last_date=dates[-1][1] if dates else None,
        undated=draft.undated,
        session=session,
        archived=archived,
    )


def _write(tape: Tape, entries: list[TapeEntry]) -> list[TapeEntry]:
    """The entries on the new tape, with the log's own dates: a store that dates appends itself (a database) takes
    them as a copy instead, after the same checks and redaction an append makes."""
    store = tape.base_store
    if not isinstance(store, CopiesEntries):
        return tape.extend(entries)
    numbered = [
        TapeEntry(number, e.kind, redact(plain_json(e.payload)), redact(plain_json(e.meta)), e.date)
        for number, e in enumerate(entries, start=1)
    ]
    store.import_entries(tape.name, numbered)
    return tape.read()


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Hold the cyclic garbage collector while a log is read and written.

    Records and entries are acyclic dicts and lists, but the collector walks them again and again as they pile
    up: on a log of 100k records that is more than half the time of the import.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _tape_name(name: str | None, format: str, session: dict[str, Any], source: Path) -> str:
    if name is not None:
        return validate_tape_name(name)
    ident = session.get("session") or source.stem
    if isinstance(session.get("agent"), str):  # a sub-agent's file shares its parent's session id
        ident = f"{ident}__agent-{session['agent']}"
    candidate = _NAME_CHARACTERS.sub("-", f"{format}__{ident}").strip("-.")[:120]
    try:
        return validate_tape_name(candidate)
    except TapeNameError:
        return validate_tape_name(_NAME_CHARACTERS.sub("-", f"{format}__{source.stem}").strip("-.")[:120])


def _branched_from(format: str, source: Path, session: dict[str, Any]) -> str | None:
    """``tape://<parent>/entry/<id>``: the entry of the parent's tape (as its import names and numbers it)
    holding the call that started this sub-agent (a Claude Code ``Agent`` call, a Codex ``spawn_agent``); the
    parent's log is read again for it, nothing is written."""
    readers = {claude_code.FORMAT: claude_code.parent_call, codex.FORMAT: codex.parent_call}
    found = readers[format](source, session) if format in readers else None
    if found is None:
        return None
    parent, call = found
    draft = TapeDraft(format)
    parent_session = read_log(format, parent, draft)
    for number, entry in enumerate(draft.finish(), start=2):  # entry 1 is the import's heading
        if entry.kind == "tool_call" and call in [c.get("id") for c in entry.payload.get("calls", ())]:
            return entry_address(_tape_name(None, format, parent_session, parent), number)
    return None


def _check_dates(entries: list[TapeEntry]) -> None:
    """Every date is ISO-8601 with its offset, as Bub writes them: checked before anything is written."""
    for entry in entries:
        try:
            aware = datetime.fromisoformat(entry.date).tzinfo is not None
        except (TypeError, ValueError):
            aware = False
        if not aware:
            raise LogImportError(
                f"Entry date {entry.date!r} is not an ISO-8601 time with an offset; nothing was written"
            )
