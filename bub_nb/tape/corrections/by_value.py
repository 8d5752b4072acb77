"""Redaction by value: a secret's text replaced wherever it occurs in a Bub home or a database store.

Every occurrence of the text, in every string (and key) of every line of every tape, archive and sidecar under
the home, becomes ``[redacted sha256:<hex>]``, the marker of that text: a summary that quoted it, a handoff
record, another agent's tape, a fork, an archive. Only the occurrence is replaced, never the whole field, so the
fields that decide ownership and lineage (``from``, ``to``, ``ownership``, anchor names, ``tape_ref``) keep
working. Each rewritten tape gets a ``redact`` event naming the marker, the text's length (so a preview made
before can be checked against it) and the ids; it holds no text of what it removed. What the rewrite cannot
reach is named in the report (``corrections.unreached``).
"""

from __future__ import annotations

import getpass
import json
import os
from collections.abc import Callable, Iterable, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import orjson

from bub_nb.errors import TapeError
from bub_nb.tape._lines import dumps, load_json
from bub_nb.tape.corrections.redaction import marker
from bub_nb.tape.corrections.unreached import file_bytes, history_to_scrub, holds, name_unreached
from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.events import REDACT, id_ranges
from bub_nb.tape.locations import bub_home
from bub_nb.tape.stores.archive import is_archive_name
from bub_nb.tape.stores.protocol import FileBacked, TapeStore
from bub_nb.tape.stores.resolve import file_store, resolve_store
from bub_nb.tape.stores.rewrite import rewrite_file

#: A ``--text`` shorter than this would hit ordinary words; it is refused.
MIN_TEXT: Final = 4
#: Redacting entries by id also redacts each of their texts this long by value; a shorter one is replaced
#: only in the copies of those entries, since "ok" by value would hit every "ok" of the home.
MIN_ENTRY_TEXT: Final = 8

_LISTENERS: list[Callable[[str], int]] = []


def when_redacted(listener: Callable[[str], int]) -> None:
    """Call ``listener(text)`` after each redaction in this process; it returns how many things it dropped.

    The layers above hold copies in memory (a pending handoff preview); they register here to drop them.
    """
    if listener not in _LISTENERS:
        _LISTENERS.append(listener)


def without_text(value: Any, text: str, mark: str) -> Any:
    """``value`` with every occurrence of ``text`` in its strings and keys replaced by ``mark``."""
    if isinstance(value, str):
        return value.replace(text, mark) if text in value else value
    if isinstance(value, Mapping):
        return {without_text(k, text, mark): without_text(v, text, mark) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [without_text(item, text, mark) for item in value]
    return value


def byte_forms(text: str) -> tuple[bytes, ...]:
    """How ``text`` can appear in a file: as UTF-8, and escaped as JSON writers escape it (ASCII or not)."""
    forms = {text.encode("utf-8", "surrogatepass"), json.dumps(text)[1:-1].encode()}
    with suppress(orjson.JSONEncodeError):  # a lone surrogate: orjson has no form for it
        forms.add(orjson.dumps(text)[1:-1])
    return tuple(forms)


@dataclass
class TextRedaction:
    """What one redaction by value rewrote, and what holds the text out of its reach."""

    marker: str
    length: int
    files: dict[str, list[int]] = field(default_factory=dict)
    """Each rewritten file (relative to the home, or a database tape), with the ids of its rewritten entries."""
    lines: int = 0
    events: dict[str, int] = field(default_factory=dict)
    """The ``redact`` event written on each live tape that held the text, by tape."""
    previews: int = 0
    unreached: list[str] = field(default_factory=list)
    """One line per place that still holds the text and that this redaction does not rewrite."""
    scrubbed: list[str] = field(default_factory=list)
    """Files outside the tapes this redaction was asked to scrub too (IPython's history)."""

    def report(self) -> str:
        """The report a person reads: what was rewritten, then what was not."""
        entries = sum(len(ids) for ids in self.files.values())
        lines = [
            f"Redacted the text ({self.length} characters, now {self.marker}) in {self.lines} lines of "
            f"{len(self.files)} files or tapes ({entries} entries); {len(self.events)} tapes record it in a redact "
            f"event; {self.previews} pending previews dropped."
        ]
        lines += [f"  rewrote {name}: {len(ids)} entries" for name, ids in sorted(self.files.items())]
        lines += [f"  scrubbed {place}" for place in self.scrubbed]
        if self.unreached:
            lines.append("Still holding the text, not rewritten:")
            lines += [f"  {place}" for place in self.unreached]
        return "\n".join(lines)


def _line_without(line: bytes, text: str, mark: str, forms: tuple[bytes, ...]) -> tuple[bytes, int] | None:
    """A line with the text replaced (JSON: in its strings and keys; otherwise in its bytes), and its id (0)."""
    if not holds(line, forms):
        return None
    try:
        value = load_json(line)
    except ValueError:
        value = None
    if value is None or not isinstance(value, dict | list):
        new = line
        for form in forms:  # a line no reader decodes: the bytes themselves
            new = new.replace(form, mark.encode())
        return new, 0
    entry_id = value.get("id") if isinstance(value, dict) else None
    return dumps(without_text(value, text, mark)), entry_id if isinstance(entry_id, int) else 0


def rewrite_home_file(path: Path, text: str) -> list[int]:
    """Rewrite the lines of one file that hold ``text``, under its lock; the ids of the entries changed (0: a line
    with no id)."""
    mark, forms = marker(text), byte_forms(text)

    def change(data: bytes) -> tuple[list[bytes], list[int]]:
        lines, changed = data.split(b"\n"), []
        for number, line in enumerate(lines):
            if (new := _line_without(line, text, mark, forms)) is not None:
                lines[number] = new[0]
                changed.append(new[1])
        return lines, changed

    return rewrite_file(path, change)


def _is_line_file(path: Path) -> bool:
    return path.name.endswith(".jsonl") or is_archive_name(path.name)


def redact_home(home: Path, text: str, done: TextRedaction) -> dict[str, list[int]]:
    """Rewrite every file under ``home`` holding ``text``; returns the live tapes touched with their ids.

    The files to rewrite are found first, and a folder where a file cannot be replaced is refused before any
    file is rewritten.
    """
    forms, tapes = byte_forms(text), home / "tapes"
    found = [
        path
        for path in sorted(p for p in home.rglob("*") if p.is_file() and not p.is_symlink())
        if not path.name.endswith(".lock") and ".rewrite" not in path.name and holds(file_bytes(path), forms)
    ]
    rewrite = [path for path in found if _is_line_file(path)]  # any other file is named afterwards
    if locked := sorted({str(path.parent) for path in found if not os.access(path.parent, os.W_OK | os.X_OK)}):
        raise TapeError(f"Folder {locked[0]!r} holds the text but cannot be written; nothing was redacted")
    for path in found:
        if path.name.endswith(".idx"):
            path.unlink(missing_ok=True)  # an anchor index holds names; it is rebuilt from the tape
    touched: dict[str, list[int]] = {}
    for path in rewrite:
        changed = rewrite_home_file(path, text)
        done.lines += len(changed)
        done.files[str(path.relative_to(home))] = [i for i in changed if i]
        if path.parent == tapes and (name := path.name.split(".jsonl")[0]) and changed:
            touched.setdefault(name, []).extend(i for i in changed if i)
    return touched


def redact_database_text(store: Any, text: str, done: TextRedaction) -> dict[str, list[int]]:
    """Rewrite every entry of this role's tapes (live and archived) holding ``text``; the tapes and their ids."""
    from bub_nb.tape.stores.postgres.redaction import redact_text_rows

    mark, forms = marker(text), byte_forms(text)

    def change(line: bytes) -> tuple[dict[str, Any], dict[str, Any]] | None:
        if not holds(line, forms):
            return None
        record = load_json(line)
        payload, meta = without_text(record["payload"], text, mark), without_text(record.get("meta") or {}, text, mark)
        return (payload, meta) if (payload, meta) != (record["payload"], record.get("meta") or {}) else None

    spelled = sorted({form.decode("utf-8", "replace") for form in forms})  # as the database's text holds them
    touched = redact_text_rows(store, text, spelled, change)
    for (name, archived), ids in touched.items():
        done.files[f"{name} (archived)" if archived else name] = ids
        done.lines += len(ids)
    merged: dict[str, list[int]] = {}
    for (name, _), ids in touched.items():
        merged.setdefault(name, []).extend(ids)
    return merged


def record_redaction(store: TapeStore, touched: Mapping[str, list[int]], done: TextRedaction, by: str | None) -> None:
    """A ``redact`` event on each live tape that held the text (an archive's on its live tape, if there is one)."""
    live = set(store.list_tapes())
    for name, ids in sorted(touched.items()):
        if name not in live:
            continue
        data = {"text": done.marker, "length": done.length, "ids": id_ranges(sorted(set(ids))), "by": by or _user()}
        done.events[name] = store.append(name, [TapeEntry.event(REDACT, data)])[0].id


def check_text(text: object) -> str:
    if not isinstance(text, str) or len(text.strip()) < MIN_TEXT:
        raise TapeError(
            f"A redaction by value needs the secret's text, at least {MIN_TEXT} characters; got {text!r:.20}"
        )
    return text


def redact_store_text(
    store: TapeStore, text: str, done: TextRedaction, by: str | None, home: Path | None, *, copies: bool = False
) -> None:
    """Redact ``text`` by value in ``store``: the folder under ``home`` for files, else the database.

    With ``copies`` the store holds pushed copies of the tapes just redacted: no ``redact`` event is written
    there, so the next push brings the home's and the two copies stay alike.
    """
    if isinstance(store, FileBacked):
        touched = redact_home(home or Path(store.directory).parent, text, done)
    elif hasattr(store, "query") and hasattr(store, "owner_and_name"):
        touched = redact_database_text(store, text, done)
    else:
        raise TapeError(f"{store!r} keeps tapes in memory; redaction rewrites files or a database")
    if not copies:
        record_redaction(store, touched, done, by)
    done.previews += sum(listener(text) for listener in list(_LISTENERS))


def redact_text(
    text: str,
    *,
    home: str | Path | None = None,
    store: TapeStore | str | None = None,
    by: str | None = None,
    databases: Iterable[TapeStore] = (),
    ipython_history: bool | str | Path = False,
) -> TextRedaction:
    """Replace every occurrence of ``text`` in every entry of every tape of a Bub home (or of a database store).

    Files under the home (tapes, archives, forks, other agents' tapes, lineage) are rewritten in place, each under
    its lock; on a database, this role's tapes in one transaction. Each tape that held the text gets a ``redact``
    event; pending handoff previews holding it are dropped. The report names what still holds it: notebooks'
    saved outputs, exports, IPython's history (scrubbed too with ``ipython_history``: ``True`` for the default
    profile's, or a path). ``databases`` are PostgreSQL stores the home was pushed to: their copies are
    rewritten too.
    """
    text = check_text(text)
    history = history_to_scrub(ipython_history)
    database = resolve_store(store) if store is not None else None
    folder = bub_home(home).resolve() if database is None else None
    target = database if database is not None else file_store(folder / "tapes")  # type: ignore[operator]
    done = TextRedaction(marker(text), len(text))
    redact_store_text(target, text, done, by, folder)
    for copy in databases:
        redact_store_text(copy, text, done, by, None, copies=True)
    rewritten = {name.split(" (")[0].split("/")[-1].split(".jsonl")[0] for name in done.files}
    done.unreached, done.scrubbed = name_unreached(
        target, folder, byte_forms(text), rewritten, (history, text, done.marker)
    )
    return done


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"
