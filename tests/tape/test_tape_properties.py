"""Slicing a tape agrees with a plain list, whatever was written, on every store and after reopening."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from harness.tapes import AppendOnlyFileStore
from hypothesis import given, settings
from hypothesis import strategies as st

from bub_nb.errors import AnchorNotFoundError, TapeError
from bub_nb.tape import FileTapeStore, MemoryTapeStore, Tape, TapeEntry, TapeStore, open_tape
from bub_nb.tape.text import entry_text

ANCHOR_NAMES = ("session/start", "phase/a", "phase/b", "memory/open", "memory/seal")
WORDS = ("alpha", "Beta", "gamma", "délta")
KINDS = ("message", "system", "event", "tool_call", "tool_result", "error", "anchor")

texts = st.lists(st.sampled_from(WORDS), min_size=0, max_size=3).map(" ".join)
anchors = st.builds(
    lambda name, state: TapeEntry.anchor(name, state),
    st.sampled_from(ANCHOR_NAMES),
    st.none() | st.fixed_dictionaries({"summary": texts}),
)
plain_entries = st.one_of(
    st.builds(lambda t, r: TapeEntry.message({"role": r, "content": t}), texts, st.sampled_from(["user", "assistant"])),
    st.builds(TapeEntry.system, texts),
    st.builds(lambda t: TapeEntry.event("run", {"note": t}), texts),
    st.builds(lambda t: TapeEntry.tool_call([{"id": "c", "type": "function", "function": {"name": t or "f"}}]), texts),
    st.builds(lambda t: TapeEntry.tool_result([t]), texts),
    st.builds(lambda t: TapeEntry.error("tool", t), texts),
)
batches = st.lists(st.lists(anchors | plain_entries, min_size=1, max_size=4), min_size=0, max_size=12)
kind_filters = st.sampled_from([(), ("message",), ("anchor", "event"), ("tool_call", "tool_result", "error")])
names = st.sampled_from((*ANCHOR_NAMES, "phase/unknown"))

_counter = itertools.count()


@pytest.fixture(scope="module")
def directory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("property-tapes")


def write(store_kind: str, directory: Path, written: list[list[TapeEntry]]) -> tuple[Tape, list[TapeEntry]]:
    store: TapeStore = AppendOnlyFileStore(directory) if store_kind == "file" else MemoryTapeStore()
    tape = open_tape(f"p{next(_counter)}", store=store)
    entries: list[TapeEntry] = []
    for batch in written:
        entries.extend(tape.extend(batch))
    return tape, entries


def readers(tape: Tape, directory: Path) -> list[Tape]:
    """The tape as written, and for files the same tape through a new store that starts from the index."""
    if isinstance(tape._base_store, FileTapeStore):
        return [tape, open_tape(tape.name, store=FileTapeStore(directory))]
    return [tape]


def only(entries: list[TapeEntry], kinds: tuple[str, ...]) -> list[TapeEntry]:
    return [e for e in entries if not kinds or e.kind in kinds]


def last_index(entries: list[TapeEntry], test: Callable[[TapeEntry], bool]) -> int | None:
    return next((i for i in range(len(entries) - 1, -1, -1) if test(entries[i])), None)


def named(name: str) -> Callable[[TapeEntry], bool]:
    return lambda e: e.kind == "anchor" and e.payload["name"] == name


def outcome(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except AnchorNotFoundError as error:
        return ("missing", error.name)
    except TapeError:
        return ("order",)


stores = pytest.mark.parametrize("store_kind", ["memory", "file"])
slow_enough = settings(max_examples=60, deadline=None)


@stores
@slow_enough
@given(written=batches, kinds=kind_filters)
def test_from_last_anchor_matches_a_list(store_kind: str, directory: Path, written: Any, kinds: Any) -> None:
    tape, entries = write(store_kind, directory, written)
    start = last_index(entries, lambda e: e.kind == "anchor" and not e.payload["name"].startswith("memory/"))
    expected = only(entries[(start + 1) if start is not None else 0 :], kinds)
    for reader in readers(tape, directory):
        assert reader.from_last_anchor(kinds=kinds) == expected


@stores
@slow_enough
@given(written=batches, name=names, kinds=kind_filters)
def test_after_anchor_matches_a_list(store_kind: str, directory: Path, written: Any, name: str, kinds: Any) -> None:
    tape, entries = write(store_kind, directory, written)
    at = last_index(entries, named(name))
    expected = ("missing", name) if at is None else only(entries[at + 1 :], kinds)
    for reader in readers(tape, directory):
        assert outcome(lambda r=reader: r.after_anchor(name, kinds=kinds)) == expected


@stores
@slow_enough
@given(written=batches, start=names, end=names, kinds=kind_filters)
def test_between_anchors_matches_a_list(
    store_kind: str, directory: Path, written: Any, start: str, end: str, kinds: Any
) -> None:
    tape, entries = write(store_kind, directory, written)
    first, last = last_index(entries, named(start)), last_index(entries, named(end))
    if first is None:
        expected: Any = ("missing", start)
    elif last is None:
        expected = ("missing", end)
    elif last <= first:
        expected = ("order",)
    else:
        expected = only(entries[first + 1 : last], kinds)
    for reader in readers(tape, directory):
        assert outcome(lambda r=reader: r.between_anchors(start, end, kinds=kinds)) == expected


@stores
@slow_enough
@given(written=batches, query=st.sampled_from([*WORDS, "ALPHA", "a", "phase/", "zzz"]), limit=st.integers(0, 6))
def test_search_matches_a_list(store_kind: str, directory: Path, written: Any, query: str, limit: int) -> None:
    tape, entries = write(store_kind, directory, written)
    expected = [e for e in reversed(entries) if query.lower() in entry_text(e).lower()][:limit]
    for reader in readers(tape, directory):
        assert reader.search(query, limit=limit) == expected


@stores
@slow_enough
@given(
    written=batches,
    kinds=st.lists(st.sampled_from(KINDS), unique=True, max_size=3),
    text=st.none() | st.sampled_from(WORDS),
    limit=st.none() | st.integers(0, 5),
    source=st.sampled_from(["all", "last_anchor", "after"]),
)
def test_query_matches_a_list(
    store_kind: str, directory: Path, written: Any, kinds: Any, text: Any, limit: Any, source: str
) -> None:
    tape, entries = write(store_kind, directory, written)
    query = tape.query()
    if source == "last_anchor":
        query = query.last_anchor()
        at = last_index(entries, lambda e: e.kind == "anchor" and not e.payload["name"].startswith("memory/"))
        base = entries[(at + 1) if at is not None else 0 :]
    elif source == "after":
        query = query.after_anchor("phase/a")
        at = last_index(entries, named("phase/a"))
        base = entries[at + 1 :] if at is not None else []
    else:
        base = entries
    if kinds:
        query = query.kinds(*kinds)
    if text is not None:
        query = query.text(text)
    if limit is not None:
        query = query.limit(limit)
    expected = [e for e in only(base, tuple(kinds)) if text is None or text.lower() in entry_text(e).lower()]
    expected = expected if limit is None else expected[:limit]
    if source == "after" and at is None:
        with pytest.raises(AnchorNotFoundError):
            query.all()
    else:
        assert query.all() == expected


@stores
@slow_enough
@given(written=batches, limit=st.none() | st.integers(0, 8))
def test_anchors_match_a_list(store_kind: str, directory: Path, written: Any, limit: Any) -> None:
    tape, entries = write(store_kind, directory, written)
    every = [(e.id, e.payload["name"], e.payload.get("state"), e.date) for e in entries if e.kind == "anchor"]
    expected = every if limit is None else every[-limit:] if limit else []
    for reader in readers(tape, directory):
        assert [(a.id, a.name, a.state, a.date) for a in reader.anchors(limit=limit)] == expected
