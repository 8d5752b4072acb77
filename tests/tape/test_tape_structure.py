"""What stores declare they offer, and the event shapes every layer reads and writes one way."""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Any

import pytest

from bub_nb.agent import Agent, OpenAIModel
from bub_nb.context import build_view
from bub_nb.tape import FileTapeStore, MemoryTapeStore, Tape, TapeEntry, open_tape
from bub_nb.tape.events import RUN, handoff_entries, run_data, run_usage
from bub_nb.tape.names import LINEAGE_FILE
from bub_nb.tape.open import open_archive
from bub_nb.tape.query import TapeQuery
from bub_nb.tape.stores.archive import archive_files
from bub_nb.tape.stores.lineage import store_lineage
from bub_nb.tape.stores.protocol import (
    FileBacked,
    KeepsLineage,
    KnowsOwners,
    MayBeReadOnly,
    ReadsColumns,
    ReadsRecords,
    SearchesLines,
    WakesReaders,
)
from bub_nb.testing import OpenAICompatibleServer

CAPABILITIES = (
    FileBacked, KeepsLineage, KnowsOwners, MayBeReadOnly, ReadsColumns, ReadsRecords, SearchesLines, WakesReaders,
)  # fmt: skip


def offered(store: Any) -> set[str]:
    return {protocol.__name__ for protocol in CAPABILITIES if isinstance(store, protocol)}


def test_each_store_declares_what_it_offers_and_no_more(tmp_path: Path) -> None:
    files = FileTapeStore(tmp_path)
    tape = Tape("t", files)
    tape.ensure_bootstrap_anchor()
    tape.reset(archive=True)
    [archive] = archive_files(tmp_path)
    assert offered(files) == {"FileBacked", "ReadsColumns", "ReadsRecords", "SearchesLines"}
    assert offered(open_archive(archive, files).base_store) == {
        "FileBacked",
        "MayBeReadOnly",
        "ReadsColumns",
        "ReadsRecords",
    }
    assert offered(MemoryTapeStore()) == set()


def test_the_database_store_keeps_lineage_and_owners_itself() -> None:
    pytest.importorskip("psycopg_pool")
    from harness.tapes import postgres_store

    assert offered(postgres_store()) == {"KeepsLineage", "KnowsOwners", "ReadsRecords", "WakesReaders"}


def test_a_fork_on_files_records_its_lineage_in_the_one_lineage_file_which_is_no_tape(tmp_path: Path) -> None:
    parent = open_tape("parent", home=tmp_path)
    parent.handoff("phase/two", {"summary": "s"})
    parent.fork_session("child", from_anchor="phase/two")
    folder = parent.base_store
    assert isinstance(folder, FileBacked) and (folder.directory / LINEAGE_FILE).is_file()
    assert store_lineage(folder) == parent.lineage() == open_tape("child", home=tmp_path).lineage()
    assert sorted(folder.list_tapes()) == ["child", "parent"]


def test_a_store_that_keeps_no_lineage_has_none_and_still_forks() -> None:
    parent = Tape("parent", MemoryTapeStore())
    parent.ensure_bootstrap_anchor()
    child = parent.fork_session("child")
    assert child.read() and parent.lineage() == [] and store_lineage(parent.base_store) == []


def test_a_query_reads_any_named_tape_in_a_store_the_way_the_tape_slices_it(tape: Tape) -> None:
    tape.ensure_bootstrap_anchor()
    tape.append_message({"role": "user", "content": "before"})
    tape.handoff("phase/one")
    tape.append_message({"role": "user", "content": "after"})

    class Named:
        name = tape.name
        store = tape.store

    assert TapeQuery(Named()).last_anchor().all() == tape.from_last_anchor()
    assert TapeQuery(Named()).between_anchors("session/start", "phase/one").all() == tape.between_anchors(
        "session/start", "phase/one"
    )


def test_handoff_entries_are_the_pair_tape_handoff_writes(tape: Tape) -> None:
    written = tape.handoff("phase/x", {"summary": "s"}, cell=2)
    built = handoff_entries("phase/x", {"summary": "s"}, cell=2)
    assert [(e.kind, e.payload, e.meta) for e in written] == [(e.kind, e.payload, e.meta) for e in built]


def test_run_usage_is_what_the_model_reported_for_the_turn(
    openai_server: OpenAICompatibleServer, tape: Tape, model: OpenAIModel
) -> None:
    usage = {"prompt_tokens": 31, "completion_tokens": 7, "total_tokens": 38}
    openai_server.reply("Done.", usage=usage)
    turn = Agent(tape, model).run("Hello")
    [run] = [e for e in turn.entries if e.kind == "event" and e.name == RUN]
    assert run_usage(run) == usage == tape.last_usage()
    assert run_data(run) is not None and run_data(run)["status"] == "ok"  # type: ignore[index]
    view_usage = build_view(tape).usage
    assert view_usage is not None and view_usage.total_tokens == usage["total_tokens"]
    assert run_usage(turn.entries[0]) is None and run_data(turn.entries[0]) is None


def test_a_run_event_without_usage_reports_none(tape: Tape) -> None:
    [run] = tape.extend([TapeEntry.event(RUN, {"status": "error", "usage": None})])
    assert run_usage(run) is None and run_data(run) == {"status": "error", "usage": None}
    assert tape.last_usage() is None and os.fspath(tape.path or "").endswith(".jsonl")


def test_a_fork_never_ends_its_copy_on_an_unanswered_prompt_and_says_where_it_went(tmp_path: Path) -> None:
    """An overflow's prompt is answered after the automatic handoff: the phase copied ends on that prompt alone."""
    tape = open_tape("trip", home=tmp_path)
    tape.ensure_bootstrap_anchor()
    tape.handoff("trip/decided", {"summary": "We chose the train."})
    tape.append_message({"role": "user", "content": "Fact 5: step-free access."})
    tape.append_message({"role": "assistant", "content": "Noted."})
    refused = tape.append_message({"role": "user", "content": "Fact 6: lunch at 12:30."})
    tape.handoff("auto_handoff/context_overflow", {"summary": "Fact 5 and 6."})
    tape.append_message({"role": "assistant", "content": "Lunch noted."})
    fork = tape.fork_session("plane", from_anchor="trip/decided", intention="Try the plane")
    roles = [m["role"] for m in build_view(fork).messages]
    assert not any(a == b == "user" for a, b in itertools.pairwise(roles)) and roles[-1] == "assistant"
    state = fork.find_anchor("intention").state or {}
    assert state["next_steps"] == "Try the plane"
    assert f"#{refused.id} was not answered in this phase" in state["unanswered"] and "12:30" in state["unanswered"]
    assert "Fact 6" not in [m.get("content") for m in build_view(fork).messages if m["role"] == "user"]
    # A phase whose last prompt was answered is copied whole, with nothing to carry.
    whole = tape.fork_session("bus", from_anchor="session/start", intention="Try the bus")
    assert "unanswered" not in (whole.find_anchor("intention").state or {})
