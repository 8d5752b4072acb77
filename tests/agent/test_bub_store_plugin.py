"""A store written for Bub's four-method protocol, provided through ``provide_tape_store``, keeps the turns."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pytest

from bub_nb.agent import BuiltinPlugin, Envelope, TurnPipeline, hookimpl
from bub_nb.agent.hooks.tape_store import BubStoreAdapter
from bub_nb.errors import PipelineError, TapeError
from bub_nb.tape import Tape


@dataclass
class Record:
    """An entry as a Bub store keeps it."""

    id: int
    kind: str
    payload: dict[str, Any]
    meta: dict[str, Any] = field(default_factory=dict)
    date: str = ""


class DictStore:
    """A store with only Bub's methods: ``list_tapes``, ``reset``, ``fetch_all(query)``, ``append(tape, entry)``."""

    def __init__(self) -> None:
        self.tapes: dict[str, list[Record]] = {}
        self.queries: list[Any] = []

    def list_tapes(self) -> list[str]:
        return [name for name, records in self.tapes.items() if records]

    def reset(self, tape: str) -> None:
        self.tapes.pop(tape, None)

    def fetch_all(self, query: Any) -> Iterable[Record]:
        self.queries.append(query)
        records = self.tapes.get(query.tape, [])
        if query._kinds:
            records = [r for r in records if r.kind in query._kinds]
        return records[: query._limit] if query._limit is not None else list(records)

    def append(self, tape: str, entry: Any) -> None:
        records = self.tapes.setdefault(tape, [])
        records.append(Record(len(records) + 1, entry.kind, dict(entry.payload), dict(entry.meta), entry.date))


class ProvidesStore:
    def __init__(self, store: Any) -> None:
        self.store = store

    @hookimpl
    def provide_tape_store(self) -> Any:
        return self.store


def test_a_bub_store_plugin_keeps_every_turn_of_a_session(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BUB_MODEL", "offline")
    store = DictStore()
    pipeline = TurnPipeline(BuiltinPlugin, entry_points=False)
    pipeline.register_plugin(ProvidesStore(store), name="bub-store")

    first = pipeline.process_inbound_sync(Envelope("notebook", "lesson.ipynb", "Hello"))
    second = pipeline.process_inbound_sync(Envelope("notebook", "lesson.ipynb", "And again"))

    assert first.state["turn"].status == "ok" and second.state["turn"].status == "ok"
    (name,) = store.list_tapes()
    records = store.tapes[name]
    assert [r.id for r in records] == list(range(1, len(records) + 1))
    assert records[0].kind == "anchor" and records[0].payload["name"] == "session/start"
    users = [r.payload["content"] for r in records if r.kind == "message" and r.payload["role"] == "user"]
    assert users == ["Hello", "And again"]
    assert second.state["turn"].entries[-1].id == records[-1].id  # ids read back from the Bub store
    assert all(query.tape == name for query in store.queries)


def test_a_tape_on_a_bub_store_slices_by_anchor_and_refuses_an_archive_it_cannot_keep() -> None:
    store = DictStore()
    tape = Tape("lesson", BubStoreAdapter(store))
    tape.ensure_bootstrap_anchor()
    tape.append_message({"role": "user", "content": "phase one"})
    tape.handoff("phase/two", {"summary": "one done"})
    tape.append_message({"role": "user", "content": "phase two"})

    assert [a.name for a in tape.anchors()] == ["session/start", "phase/two"]
    assert [e.payload.get("content") for e in tape.from_last_anchor(kinds=("message",))] == ["phase two"]
    before = list(store.tapes["lesson"])
    with pytest.raises(TapeError, match="keeps no archive"):
        tape.reset(archive=True)
    assert store.tapes["lesson"] == before  # refused before anything was dropped
    tape.reset()
    start = tape.read()[0]
    assert (start.id, start.kind, start.payload["name"]) == (1, "anchor", "session/start")


class AsyncDictStore:
    """Bub's ``AsyncTapeStore``: the same four methods as coroutines, each yielding to the loop before it answers."""

    def __init__(self) -> None:
        self.sync = DictStore()

    async def list_tapes(self) -> list[str]:
        await asyncio.sleep(0)
        return self.sync.list_tapes()

    async def reset(self, tape: str) -> None:
        await asyncio.sleep(0)
        self.sync.reset(tape)

    async def fetch_all(self, query: Any) -> Iterable[Record]:
        await asyncio.sleep(0)
        return self.sync.fetch_all(query)

    async def append(self, tape: str, entry: Any) -> None:
        await asyncio.sleep(0)
        self.sync.append(tape, entry)


def test_an_async_bub_store_plugin_keeps_every_turn_awaited_on_the_projects_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BUB_MODEL", "offline")
    store = AsyncDictStore()
    pipeline = TurnPipeline(BuiltinPlugin, entry_points=False)
    pipeline.register_plugin(ProvidesStore(store), name="bub-async-store")

    turn = pipeline.process_inbound_sync(Envelope("notebook", "lesson.ipynb", "Hello")).state["turn"]

    assert turn.status == "ok"
    (name,) = store.sync.list_tapes()
    records = store.sync.tapes[name]
    assert [r.id for r in records] == list(range(1, len(records) + 1))
    assert [r.payload["content"] for r in records if r.kind == "message" and r.payload["role"] == "user"] == ["Hello"]
    tape = Tape(name, pipeline.tape_store())  # read back from synchronous code, outside any loop
    assert [e.id for e in tape.read()] == [r.id for r in records]
    tape.reset()
    start = tape.read()[0]
    assert (start.id, start.kind, start.payload["name"]) == (1, "anchor", "session/start")
    assert len(store.sync.tapes[name]) < len(records)


def test_a_store_of_neither_kind_is_refused_in_one_line_naming_its_type() -> None:
    for answer in ({"tapes": []}, object()):
        pipeline = TurnPipeline(entry_points=False)
        pipeline.register_plugin(ProvidesStore(answer))
        with pytest.raises(PipelineError, match="neither a bub_nb TapeStore") as refused:
            pipeline.tape_store()
        assert "\n" not in str(refused.value) and type(answer).__name__ in str(refused.value)
