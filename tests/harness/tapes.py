"""Test instruments for the tape layer: Bub's own reader and writer, and a store that proves appends only append."""

from __future__ import annotations

import atexit
import itertools
import json
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bub_nb.tape import FileTapeStore, MemoryTapeStore, TapeEntry, TapeStore
from bub_nb.tape.citations import CITATION
from bub_nb.tape.text import payload_call_names

STORE_KINDS = ("memory", "file", "postgres")


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
    if kind == "postgres":
        return postgres_store()
    return AppendOnlyFileStore(directory / "tapes") if kind == "file" else MemoryTapeStore()


# -- one PostgreSQL server for the whole test run, a fresh schema for each store ----------------

_server: Any = None
_server_lock = threading.Lock()
_schemas = itertools.count(1)
_open_stores: list[Any] = []


def postgres_server() -> Any:
    """The test run's PostgreSQL server, started on first use; skips (fails in CI) without the binaries."""
    global _server
    import pytest

    from bub_nb.testing.postgres import PostgresServer, server_binaries

    with _server_lock:
        if _server is None:
            if server_binaries() is None:
                reason = "PostgreSQL server binaries (initdb, pg_ctl) are not installed: apt-get install postgresql"
                if os.environ.get("CI") == "true":
                    pytest.fail(reason)
                pytest.skip(reason)
            _server = PostgresServer().start()
            atexit.register(_stop_server)
        return _server


def close_stores() -> None:
    while _open_stores:
        _open_stores.pop().close()


def _stop_server() -> None:
    close_stores()
    if _server is not None:
        _server.cleanup()


def postgres_store(**options: Any) -> Any:
    """A ``PostgresTapeStore`` in a schema of its own on the shared server."""
    from bub_nb.tape.stores.postgres import PostgresTapeStore

    server = postgres_server()
    store = PostgresTapeStore(server.dsn(), schema=f"t{os.getpid()}_{next(_schemas)}", pool_size=2, **options)
    _open_stores.append(store)
    return store


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
    """A Bub-style writer in its own process: ``count`` messages, one extend each, an anchor every ``every``.

    Halfway it waits until another writer has appended after its line (a minute at most), so the two overlap
    however the machine schedules them."""
    for number in range(count):
        if number == count // 2:
            written, deadline = Path(path).stat().st_size, time.monotonic() + 60
            while Path(path).stat().st_size == written and time.monotonic() < deadline:
                time.sleep(0.001)
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


def postgres_writer_process(dsn: str, schema: str, tape: str, count: int, label: str, batch: int = 1) -> None:
    """One writer process appending ``count`` batches; each acknowledged batch is printed as ``label first last``."""
    import sys

    from bub_nb.tape.stores.postgres import PostgresTapeStore

    store = PostgresTapeStore(dsn, schema=schema, pool_size=1)
    for number in range(count):
        entries = [
            TapeEntry.message({"role": "user", "content": f"{label} {number} {part}"}, writer=label)
            for part in range(batch)
        ]
        stored = store.append(tape, entries)
        sys.stdout.write(f"{label} {stored[0].id} {stored[-1].id} {number}\n")
        sys.stdout.flush()
    store.close()


class CountingStore(MemoryTapeStore):
    """A real in-memory store that also records how much of the tape each read touched."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: list[tuple[int, int | None]] = []
        self.reversed_entries = 0

    def read(self, tape: str, start: int = 1, stop: int | None = None) -> list[TapeEntry]:
        self.reads.append((start, stop))
        return super().read(tape, start, stop)

    def iter_reverse(self, tape: str) -> Iterator[TapeEntry]:
        for entry in super().iter_reverse(tape):
            self.reversed_entries += 1
            yield entry


def link_citations(text: str, href: Callable[[int], str]) -> str:
    """``text`` in Markdown with each citation a link to its first entry (``[[#12]](href)``), ``href(id)``
    giving the target: what a transcript's summary line shows."""
    return CITATION.sub(lambda match: f"[{match.group(0)}]({href(int(match.group(1)))})", text)


def call_names(entry: TapeEntry) -> list[str]:
    """The tool names of a ``tool_call`` entry, or of an assistant message's ``tool_calls``."""
    return payload_call_names(entry.kind, entry.payload)
