"""One contract for every TapeStore: the file store and the memory store must behave the same."""

from __future__ import annotations

import inspect
import threading
from pathlib import Path

import pytest
from harness.tapes import STORE_KINDS, make_store

from bub_nb.tape import AnchorRef, TapeEntry, TapeStore


@pytest.fixture(params=STORE_KINDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> TapeStore:
    return make_store(request.param, tmp_path)


def message(text: str, **meta: object) -> TapeEntry:
    return TapeEntry.message({"role": "user", "content": text}, **meta)


def test_a_store_is_a_tape_store(store: TapeStore) -> None:
    """Every method of the protocol, with the protocol's parameters: ``isinstance`` alone only compares names."""
    for name in ("list_tapes", "exists", "append", "read", "iter_reverse", "anchors", "stats", "reset"):
        wanted = inspect.signature(getattr(TapeStore, name)).parameters
        given = inspect.signature(getattr(store, name)).parameters
        assert list(given) == [p for p in wanted if p != "self"], f"{type(store).__name__}.{name}{list(given)}"
        for parameter in given.values():
            assert parameter.kind == wanted[parameter.name].kind, f"{type(store).__name__}.{name}: {parameter}"


def test_ids_start_at_one_and_count_up_across_appends(store: TapeStore) -> None:
    first = store.append("t", [message("a"), message("b")])
    second = store.append("t", [message("c")])
    assert [e.id for e in first + second] == [1, 2, 3]
    assert [e.id for e in store.read("t")] == [1, 2, 3]
    assert store.stats("t").last_id == 3 and store.stats("t").entries == 3


def test_the_caller_cannot_choose_ids(store: TapeStore) -> None:
    stored = store.append("t", [TapeEntry(42, "message", {"role": "user", "content": "x"})])
    assert stored[0].id == 1


def test_append_returns_what_read_gives_back(store: TapeStore) -> None:
    entries = [
        message("héllo ✓ 你好", run_id="r1"),
        TapeEntry.anchor("phase/a", {"summary": "done", "n": [1, 2]}),
        TapeEntry.tool_call([{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]),
        TapeEntry.tool_result(["ok", {"kind": "error", "message": "boom"}]),
        TapeEntry.error("tool", "failed", {"line": 3}),
        TapeEntry.event("run", {"usage": {"prompt_tokens": 3}}),
        TapeEntry.system("be brief"),
    ]
    stored = store.append("t", entries)
    assert store.read("t") == stored
    assert [(e.kind, e.payload, e.meta, e.date) for e in stored] == [
        (e.kind, e.payload, e.meta, e.date) for e in entries
    ]


def test_an_empty_append_writes_nothing(store: TapeStore) -> None:
    assert store.append("t", []) == []
    assert not store.exists("t") and store.stats("t").last_id == 0


def test_read_takes_an_id_range(store: TapeStore) -> None:
    store.append("t", [message(str(n)) for n in range(1, 11)])
    assert [e.id for e in store.read("t", 4)] == list(range(4, 11))
    assert [e.id for e in store.read("t", 4, 7)] == [4, 5, 6]
    assert store.read("t", 7, 7) == [] and store.read("t", 11) == [] and store.read("t", 8, 3) == []


def test_iter_reverse_gives_every_entry_newest_first(store: TapeStore) -> None:
    store.append("t", [message(str(n)) for n in range(1, 6)])
    assert [e.id for e in store.iter_reverse("t")] == [5, 4, 3, 2, 1]
    assert list(store.iter_reverse("missing")) == []


def test_anchors_lists_ids_and_names_oldest_first(store: TapeStore) -> None:
    store.append("t", [TapeEntry.anchor("session/start"), message("a"), TapeEntry.anchor("memory/open")])
    store.append("t", [message("b"), TapeEntry(0, "anchor", {"name": 7}), TapeEntry.anchor("phase/b", {"k": 1})])
    assert list(store.anchors("t")) == [
        AnchorRef(1, "session/start"),
        AnchorRef(3, "memory/open"),
        AnchorRef(5, ""),
        AnchorRef(6, "phase/b"),
    ]
    assert list(store.anchors("t")[-2:]) == [AnchorRef(5, ""), AnchorRef(6, "phase/b")]


def test_tapes_are_independent(store: TapeStore) -> None:
    store.append("one", [message("a"), message("b")])
    store.append("two", [message("c")])
    assert [e.id for e in store.read("two")] == [1]
    assert store.list_tapes() == ["one", "two"]
    assert store.exists("one") and not store.exists("three")


def test_reset_starts_the_tape_over(store: TapeStore) -> None:
    store.append("t", [TapeEntry.anchor("a"), message("x")])
    assert store.reset("t") is None
    assert store.read("t") == [] and list(store.anchors("t")) == [] and not store.exists("t")
    assert [e.id for e in store.append("t", [message("y")])] == [1]


def test_reset_with_archive_keeps_the_old_entries_somewhere(store: TapeStore) -> None:
    store.append("t", [TapeEntry.anchor("a"), message("x")])
    location = store.reset("t", archive=True)
    assert isinstance(location, str) and location
    assert store.read("t") == []


def test_concurrent_appends_from_threads_never_share_an_id(store: TapeStore) -> None:
    def write(label: str) -> None:
        for number in range(100):
            store.append("t", [message(f"{label}{number}")])

    threads = [threading.Thread(target=write, args=(label,)) for label in "abc"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    ids = [e.id for e in store.read("t")]
    assert ids == list(range(1, 301))
    for label in "abc":  # each writer's entries stay in its order
        texts = [e.payload["content"] for e in store.read("t") if e.payload["content"].startswith(label)]
        assert texts == [f"{label}{number}" for number in range(100)]


def test_stats_names_where_the_tape_lives(store: TapeStore) -> None:
    store.append("t", [message("a")])
    stats = store.stats("t")
    assert "t" in stats.location and stats.bad_lines == 0 and stats.torn_tail_bytes == 0
