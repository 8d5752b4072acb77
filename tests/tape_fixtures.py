"""Test instruments for the tape layer: Bub's own reader and writer, and a store that proves appends only append."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bub_nb.tape import FileTapeStore, MemoryTapeStore, TapeEntry, TapeStore

STORE_KINDS = ("memory", "file")


class AppendOnlyFileStore(FileTapeStore):
    """A real file store that checks, around every append, that the old bytes are a prefix of the new."""

    appends_checked = 0

    def append(self, tape: str, entries: Sequence[TapeEntry]) -> list[TapeEntry]:
        path = self.path_for(tape)
        before = path.read_bytes() if path.exists() else b""
        stored = super().append(tape, entries)
        after = path.read_bytes() if path.exists() else b""
        assert after.startswith(before), f"append to {path} changed bytes that were already written"
        AppendOnlyFileStore.appends_checked += 1
        return stored


def make_store(kind: str, directory: Path) -> TapeStore:
    return AppendOnlyFileStore(directory / "tapes") if kind == "file" else MemoryTapeStore()


# -- Bub 0.5's tape file, reimplemented from its source: the reader loop and the writer -----------


def bub_read(path: Path) -> list[dict[str, Any]]:
    """Bub's ``TapeFile.read``: json.loads per line, skip what does not decode or is not an entry."""
    entries = []
    with path.open("r", encoding="utf-8") as handle:
        for raw_line in handle:
            line = raw_line.strip()
            if not line:
                continue
            try:
                payload = json.loads(line)
            except json.JSONDecodeError:
                continue
            if not isinstance(payload, dict):
                continue
            entry_id, kind, entry_payload = payload.get("id"), payload.get("kind"), payload.get("payload")
            if not isinstance(entry_id, int) or not isinstance(kind, str) or not isinstance(entry_payload, dict):
                continue
            entries.append(payload)
    return entries


def bub_append(path: Path, entries: Sequence[TapeEntry]) -> list[TapeEntry]:
    """Bub's ``TapeFile.extend``: read the last id, then append whole lines, without any lock."""
    existing = bub_read(path) if path.exists() else []
    next_id = existing[-1]["id"] + 1 if existing else 1
    stored = []
    with path.open("a", encoding="utf-8") as handle:
        for entry in entries:
            record = TapeEntry(next_id, entry.kind, entry.payload, entry.meta, entry.date)
            handle.write(json.dumps(asdict(record), ensure_ascii=False) + "\n")
            stored.append(record)
            next_id += 1
    return stored


def bub_writer_process(path: str, count: int, every: int) -> None:
    """A Bub-style writer in its own process: ``count`` messages, one extend each, an anchor every ``every``."""
    for number in range(count):
        entry = (
            TapeEntry.anchor(f"bub/{number}", {"by": "bub"})
            if every and number % every == 0
            else TapeEntry.message({"role": "user", "content": f"bub {number} — ünïcode"})
        )
        bub_append(Path(path), [entry])


def store_writer_process(directory: str, tape: str, count: int, label: str) -> None:
    """One kernel appending ``count`` entries through its own store, one append each."""
    store = FileTapeStore(directory)
    for number in range(count):
        entry = (
            TapeEntry.anchor(f"{label}/{number}")
            if number % 97 == 0
            else TapeEntry.message({"role": "user", "content": f"{label} {number}"}, writer=label)
        )
        store.append(tape, [entry])


def file_lines(path: Path) -> list[bytes]:
    data = path.read_bytes()
    assert data.endswith(b"\n") or not data
    return data[:-1].split(b"\n") if data else []
