"""Two people's appends to one shared tape, merged: every entry kept, ids strictly increasing, lineage kept.

A tape file in git meets a merge as any text file does: two clones that both appended either conflict, or keep
both sides one after the other, whose ids then repeat (a read refuses such a file). :func:`merge_tapes` takes the
first side as it is and appends the entries only the other side holds, renumbered after the first side's last id
(their citations, views and ranges follow them, as a fork's do), after a ``merge`` event that records where
they came from and how their ids moved. One file holding both sides is split where its ids first go back.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bub_nb.errors import TapeError
from bub_nb.tape._lines import decode_records
from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.events import id_ranges, range_ids
from bub_nb.tape.forks.renumber import renumber

MERGE = "merge"
"""Entries of another copy of this tape follow, renumbered: ``{"from", "ids", "renumbered"}`` (``ids``: their
old ids as ``[first, last]`` ranges; ``renumbered``: the first new id)."""


@dataclass(frozen=True, slots=True)
class Merged:
    """What a merge did: the tape file written, the entries it had, and the other side's entries it added."""

    path: Path
    kept: int
    added: int

    def describe(self) -> str:
        if not self.added:
            return f"{self.path.name}: nothing to merge, its {self.kept} entries already hold the other side's"
        return (
            f"{self.path.name}: kept its {self.kept} entries and added the other side's {self.added}, renumbered "
            f"after them; the ids now increase strictly"
        )


def _entries(path: Path) -> list[TapeEntry]:
    try:
        lines = path.read_bytes().splitlines()
    except OSError as error:
        raise TapeError(f"Cannot read tape file {str(path)!r}: {error.strerror or error}") from None
    return [TapeEntry.of_record(record) for record in decode_records(lines) if record is not None]


def _sides(entries: list[TapeEntry]) -> list[list[TapeEntry]]:
    """Runs of strictly increasing ids: each time the ids go back, another writer's side starts."""
    sides: list[list[TapeEntry]] = []
    for entry in entries:
        if not sides or entry.id <= sides[-1][-1].id:
            sides.append([])
        sides[-1].append(entry)
    return sides


def _merged_before(entries: list[TapeEntry], origin: str) -> set[tuple[int, str]]:
    """The other side's entries an earlier merge from ``origin`` added, as (their old id, their date)."""
    dates = {entry.id: entry.date for entry in entries}
    found: set[tuple[int, str]] = set()
    for entry in entries:
        data = entry.payload.get("data") if entry.name == MERGE else None
        if not isinstance(data, dict) or data.get("from") != origin or type(data.get("renumbered")) is not int:
            continue
        for number, old in enumerate(range_ids(data.get("ids")) or ()):
            date = dates.get(data["renumbered"] + number)
            if date is not None:
                found.add((old, date))
    return found


def _merged(first: list[TapeEntry], others: list[list[TapeEntry]], origin: str) -> tuple[list[TapeEntry], int]:
    """``first`` with what ``others`` add, renumbered after it; the count added."""
    out = list(first)
    held = {(entry.id, entry.to_line()) for entry in out}
    before = _merged_before(out, origin)
    for side in others:
        new = [
            entry for entry in side if (entry.id, entry.to_line()) not in held and (entry.id, entry.date) not in before
        ]
        if not new:
            continue
        last = out[-1].id if out else 0
        ids = {entry.id: entry.id for entry in side if (entry.id, entry.to_line()) in held}  # shared: unchanged
        ids.update({entry.id: last + 2 + number for number, entry in enumerate(new)})
        event = TapeEntry.event(MERGE, {"from": origin, "ids": id_ranges(e.id for e in new), "renumbered": last + 2})
        out.append(event.with_id(last + 1))
        moved = renumber(new, ids, origin)
        out += [entry.with_id(ids[old.id]) for entry, old in zip(moved, new, strict=True)]
        held |= {(entry.id, entry.to_line()) for entry in out[-len(new) - 1 :]}
    return out, len(out) - len(first)


def merge_tapes(first: str | Path, second: str | Path | None = None) -> Merged:
    """Merge ``second``'s entries into the tape file ``first`` (or, alone, the sides ``first`` holds).

    ``first``'s entries stay as they are; what only ``second`` holds is appended, renumbered. The file is written
    whole, beside itself, then moved into place (mode 0600, as every tape), so a failure leaves it as it was;
    its index sidecar, which described the old bytes, is removed.
    """
    path = Path(first).expanduser()
    own = _entries(path)
    sides = _sides(own)
    if second is not None:
        other = Path(second).expanduser()
        sides = [*sides, *_sides(_entries(other))]
        origin = other.name
    else:
        origin = path.name
    if not sides:
        raise TapeError(f"Tape file {str(path)!r} holds no entries to merge")
    out, added = _merged(sides[0], sides[1:], origin)
    if out == own:
        return Merged(path, len(own), 0)
    _write(path, out)
    return Merged(path, len(sides[0]), added)


def _write(path: Path, entries: list[TapeEntry]) -> None:
    data = b"".join(entry.to_line() for entry in entries)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".merging")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    for sidecar in (path.with_name(path.name + ".idx"),):
        sidecar.unlink(missing_ok=True)
