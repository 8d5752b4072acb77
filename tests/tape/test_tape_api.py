"""The Tape API (docs/api.md), on the file store and the memory store alike."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest
from harness.tapes import STORE_KINDS, make_store

from bub_nb.errors import AnchorNotFoundError, EntryNotFoundError, TapeAddressError, TapeError, TapeNameError
from bub_nb.tape import AnchorSummary, FileTapeStore, Tape, TapeEntry, TapeInfo, open_tape
from bub_nb.tape.stores.protocol import KnowsOwners


@pytest.fixture(params=STORE_KINDS)
def tape(request: pytest.FixtureRequest, tmp_path: Path) -> Tape:
    return open_tape("t", store=make_store(request.param, tmp_path))


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def contents(entries: list[TapeEntry]) -> list[object]:
    return [e.payload.get("content", e.payload.get("name")) for e in entries]


def test_bootstrap_writes_session_start_once(tape: Tape) -> None:
    anchor, event = tape.ensure_bootstrap_anchor()
    assert (anchor.kind, anchor.payload) == ("anchor", {"name": "session/start", "state": {"owner": "human"}})
    assert (event.kind, event.payload["name"], event.payload["data"]) == (
        "event",
        "handoff",
        {"name": "session/start", "state": {"owner": "human"}},
    )
    assert tape.ensure_bootstrap_anchor() == []
    assert [a.name for a in tape.anchors()] == ["session/start"] and len(tape) == 2


def test_bootstrap_leaves_a_tape_with_an_anchor_alone(tape: Tape) -> None:
    tape.handoff("phase/own")
    assert tape.ensure_bootstrap_anchor() == []


def test_bootstrap_still_starts_a_phase_after_a_memory_save(tape: Tape) -> None:
    tape.append(TapeEntry.anchor("memory/open", {"version": 1}))
    assert [e.payload.get("name") for e in tape.ensure_bootstrap_anchor()] == ["session/start", "handoff"]


def test_every_append_returns_the_stored_entry(tape: Tape) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1}'}}
    written = [
        tape.append_message(user("hi"), run_id="r1"),
        tape.append_system("be brief"),
        tape.append_event("run", {"status": "ok"}),
        tape.append_tool_call([call], content="thinking"),
        tape.append_tool_result(["2"]),
        tape.append_error("tool", "boom", {"line": 1}),
    ]
    assert [e.id for e in written] == [1, 2, 3, 4, 5, 6]
    assert [(e.kind, e.payload) for e in written] == [
        ("message", user("hi")),
        ("system", {"content": "be brief"}),
        ("event", {"name": "run", "data": {"status": "ok"}}),
        ("tool_call", {"calls": [call], "content": "thinking"}),
        ("tool_result", {"results": ["2"]}),
        ("error", {"kind": "tool", "message": "boom", "details": {"line": 1}}),
    ]
    assert written[0].meta == {"run_id": "r1"}
    assert tape.read() == written


def test_entries_are_frozen_values_with_one_constructor_per_kind() -> None:
    entries = [
        TapeEntry.message(user("x")),
        TapeEntry.system("s"),
        TapeEntry.anchor("a", {"k": 1}),
        TapeEntry.event("e", 1),
        TapeEntry.tool_call([]),
        TapeEntry.tool_result([]),
        TapeEntry.error("k", "m"),
    ]
    assert [e.kind for e in entries] == ["message", "system", "anchor", "event", "tool_call", "tool_result", "error"]
    assert all(e.id == 0 and datetime.fromisoformat(e.date).utcoffset() == timedelta(0) for e in entries)
    with pytest.raises(AttributeError):
        entries[0].id = 5  # type: ignore[misc]


def test_handoff_writes_an_anchor_then_a_handoff_event(tape: Tape) -> None:
    anchor, event = tape.handoff("phase/x", {"summary": "done"})
    assert (anchor.kind, anchor.payload) == ("anchor", {"name": "phase/x", "state": {"summary": "done"}})
    handoff_data = {"name": "phase/x", "state": {"summary": "done"}}
    assert (event.kind, event.payload) == ("event", {"name": "handoff", "data": handoff_data})
    assert event.id == anchor.id + 1
    with pytest.raises(TapeError, match="''"):
        tape.handoff("")


def test_anchors_are_summaries_of_the_last_ones(tape: Tape) -> None:
    for number in range(25):
        tape.handoff(f"phase/{number}", {"n": number})
    summaries = tape.anchors()
    assert len(summaries) == 20 and all(isinstance(s, AnchorSummary) for s in summaries)
    assert [s.name for s in summaries] == [f"phase/{n}" for n in range(5, 25)]
    last = summaries[-1]
    assert (last.id, last.state, last.date) == (49, {"n": 24}, tape.get(49).date)
    assert [s.name for s in tape.anchors(limit=2)] == ["phase/23", "phase/24"]
    assert len(tape.anchors(limit=None)) == 25 and tape.anchors(limit=0) == []


def build_phases(tape: Tape) -> None:
    tape.ensure_bootstrap_anchor()  # 1, 2
    tape.append_message(user("a"))  # 3
    tape.handoff("phase/one", {"k": 1})  # 4, 5
    tape.append_message(user("b"))  # 6
    tape.append_tool_result(["r"])  # 7
    tape.handoff("phase/two")  # 8, 9
    tape.append_message(user("c"))  # 10
    tape.handoff("phase/one", {"k": 2})  # 11, 12
    tape.append_message(user("d"))  # 13
    tape.append(TapeEntry.anchor("memory/open", {"version": 1}))  # 14
    tape.append_message(user("e"))  # 15


def test_from_last_anchor_starts_after_the_last_phase_anchor(tape: Tape) -> None:
    build_phases(tape)
    assert [e.id for e in tape.from_last_anchor()] == [12, 13, 14, 15]
    assert contents(tape.from_last_anchor(kinds=("message",))) == ["d", "e"]


def test_from_last_anchor_without_anchors_is_the_whole_tape(tape: Tape) -> None:
    tape.append_message(user("a"))
    tape.append(TapeEntry.anchor("memory/open"))
    assert [e.id for e in tape.from_last_anchor()] == [1, 2]


def test_a_name_means_its_last_occurrence(tape: Tape) -> None:
    build_phases(tape)
    assert [e.id for e in tape.after_anchor("phase/one")] == [12, 13, 14, 15]
    assert [e.id for e in tape.after_anchor("phase/two", kinds=("message",))] == [10, 13, 15]
    assert [e.id for e in tape.between_anchors("session/start", "phase/two")] == [2, 3, 4, 5, 6, 7]
    assert [e.id for e in tape.between_anchors("phase/two", "phase/one", kinds=("message",))] == [10]
    assert tape.find_anchor("phase/one").state == {"k": 2}


def test_an_unknown_anchor_is_named_with_the_known_ones(tape: Tape) -> None:
    build_phases(tape)
    for call in (lambda: tape.after_anchor("phase/nope"), lambda: tape.between_anchors("phase/one", "phase/nope")):
        with pytest.raises(AnchorNotFoundError) as caught:
            call()
        message = str(caught.value)
        assert "'phase/nope'" in message
        assert "session/start, phase/one, phase/two, memory/open" in message


def test_between_anchors_in_the_wrong_order_says_so(tape: Tape) -> None:
    build_phases(tape)
    with pytest.raises(TapeError, match=r"'session/start' \(#1\) does not come after anchor 'phase/two' \(#8\)"):
        tape.between_anchors("phase/two", "session/start")


def test_search_is_newest_first_and_limited(tape: Tape) -> None:
    for number in range(30):
        tape.append_message(user(f"Needle {number}" if number % 2 else f"hay {number}"))
    found = tape.search("needle")
    assert contents(found) == [f"Needle {n}" for n in range(29, 0, -2)]
    assert contents(tape.search("NEEDLE", limit=2)) == ["Needle 29", "Needle 27"]
    assert tape.search("absent") == []


def test_search_reads_tool_calls_results_anchors_and_errors(tape: Tape) -> None:
    tape.append_tool_call([{"id": "c", "type": "function", "function": {"name": "grep", "arguments": '{"q": "x"}'}}])
    tape.append_tool_result([{"hits": ["alpha"]}])
    tape.handoff("phase/beta", {"summary": "gamma"})
    tape.append_error("model", "delta failed")
    assert [e.kind for e in tape.search("grep")] == ["tool_call"]
    assert [e.kind for e in tape.search("alpha")] == ["tool_result"]
    assert [e.kind for e in tape.search("gamma")] == ["event", "anchor"]
    assert [e.kind for e in tape.search("delta")] == ["error"]


def test_query_chains_filters_without_reading_until_asked(tape: Tape) -> None:
    base = datetime(2026, 2, 1, tzinfo=UTC)
    dated = []
    for day in range(10):
        when = (base + timedelta(days=day, hours=12)).isoformat()
        dated += [
            TapeEntry(0, "message", user(f"auth day {day}"), {}, when),
            TapeEntry(0, "event", {"name": "run", "data": {"day": day}}, {}, when),
        ]
    if isinstance(tape.store, KnowsOwners):  # a database dates what is appended; dated entries come in as pushed
        tape.store.import_entries(tape.name, [entry.with_id(n) for n, entry in enumerate(dated, start=1)])
    else:
        for entry in dated:
            tape.append(entry)
    query = tape.query().kinds("message").between_dates("2026-02-03", "2026-02-06").text("AUTH")
    assert contents(query.all()) == [f"auth day {d}" for d in range(2, 6)]
    assert contents(query.limit(2).all()) == ["auth day 2", "auth day 3"]
    assert contents(query.all()) == [f"auth day {d}" for d in range(2, 6)]  # each filter made a new query
    assert query.count() == 4 and query.first() is not None
    assert tape.query().kinds("event").between_dates(base + timedelta(days=8), None).count() == 2
    assert contents(tape.query().between_dates(None, "2026-02-01T23:00").kinds("message").all()) == ["auth day 0"]


def test_query_rejects_what_it_cannot_use(tape: Tape) -> None:
    with pytest.raises(TapeError, match="'messages'"):
        tape.query().kinds("messages")
    with pytest.raises(TapeError, match="'last tuesday'"):
        tape.query().between_dates("last tuesday", None)
    with pytest.raises(TapeError, match="-1"):
        tape.query().limit(-1)


def test_info_reports_the_tape_at_a_glance(tape: Tape) -> None:
    build_phases(tape)
    tape.append_event("run", {"status": "ok", "usage": {"prompt_tokens": 120, "completion_tokens": 7}})
    tape.append_event("run", "a run event some other writer shaped its own way")
    info = tape.info()
    assert isinstance(info, TapeInfo)
    assert (info.name, info.entries, info.anchors, info.last_anchor) == ("t", 17, 5, "phase/one")
    assert info.entries_since_last_anchor == 6
    assert info.last_usage == {"prompt_tokens": 120, "completion_tokens": 7}
    assert info.bad_lines == 0 and "phase/one" in str(info)


def test_reset_starts_over_with_session_start(tape: Tape) -> None:
    build_phases(tape)
    anchor, _event = tape.reset()
    state = {"owner": "human"}
    if isinstance(tape.store, KnowsOwners):  # a database always keeps the old tape, and says where
        state["archived"] = anchor.payload["state"]["archived"]
        assert state["archived"].endswith(tape.name + "@" + state["archived"].rsplit("@", 1)[1])
    assert anchor.id == 1 and anchor.payload == {"name": "session/start", "state": state}
    assert len(tape) == 2


def test_reset_with_archive_keeps_the_old_file_as_bub_names_it(tmp_path: Path) -> None:
    tape = open_tape("t", store=FileTapeStore(tmp_path))
    build_phases(tape)
    old = tape.path.read_bytes()  # type: ignore[union-attr]
    anchor, _event = tape.reset(archive=True)
    archived = Path(anchor.payload["state"]["archived"])
    assert re.fullmatch(r"t\.jsonl\.\d{8}T\d{6}Z\.bak", archived.name) and archived.parent == tmp_path
    assert archived.read_bytes() == old
    assert anchor.payload["state"]["owner"] == "human"
    assert [a.name for a in tape.anchors()] == ["session/start"]
    assert FileTapeStore(tmp_path).list_tapes() == ["t"]


def test_writes_inside_a_fork_are_merged_back_in_order(tape: Tape) -> None:
    tape.ensure_bootstrap_anchor()
    with tape.fork():
        tape.append_message(user("side 1"))
        tape.handoff("phase/side")
        assert [e.payload["name"] for e in tape.from_last_anchor()] == ["handoff"]
        assert tape._base_store.stats("t").last_id == 2  # nothing reached the parent yet
        tape.append_message(user("side 2"))
    assert contents(tape.read(3)) == ["side 1", "phase/side", "handoff", "side 2"]
    assert [e.id for e in tape.read()] == [1, 2, 3, 4, 5, 6]
    assert tape.anchors()[-1].name == "phase/side"


def test_a_fork_without_merge_back_leaves_no_trace(tape: Tape) -> None:
    tape.append_message(user("kept"))
    with tape.fork(merge_back=False):
        tape.append_message(user("dropped"))
        assert contents(tape.read()) == ["kept", "dropped"]
    assert contents(tape.read()) == ["kept"]


def test_a_fork_is_an_async_context_manager_private_to_its_task(tape: Tape) -> None:
    async def both() -> None:
        in_fork, written_outside = asyncio.Event(), asyncio.Event()

        async def forked() -> None:
            async with tape.fork():
                tape.append_message(user("in the fork"))
                in_fork.set()
                await written_outside.wait()  # another task writes while this fork is open
                tape.append_message(user("still in the fork"))

        async def outside() -> None:
            await in_fork.wait()
            tape.append_message(user("outside"))
            written_outside.set()

        await asyncio.gather(forked(), outside())

    asyncio.run(both())
    assert contents(tape.read()) == ["outside", "in the fork", "still in the fork"]


def test_fork_session_copies_from_an_anchor_and_records_lineage(tmp_path: Path) -> None:
    parent = open_tape("parent", store=FileTapeStore(tmp_path))
    build_phases(parent)
    child = parent.fork_session("child", from_anchor="phase/two", intention={"next_steps": "investigate"})
    copied = [e for e in child.read() if "forked_from" in e.meta]
    # with an intention the fork goes back to phase/two's decision: its phase, up to the next phase anchor (#11);
    # the phase ends on a prompt nothing answered (#10), which the intention carries instead of the copy
    assert [e.payload for e in copied] == [e.payload for e in parent.read(8, 10)]
    assert copied[0].meta["forked_from"] == "tape://parent/entry/8"
    intention = child.find_anchor("intention")
    assert intention.state == {"next_steps": "investigate", "unanswered": "#10 was not answered in this phase "
                               "(its answer came after #11): “c”"}  # fmt: skip
    assert [e.payload.get("name") for e in child.read(intention.id - 2, intention.id)] == ["phase/two", "handoff"]
    assert child.from_last_anchor()[0].payload["name"] == "handoff"
    assert contents(child.from_last_anchor(kinds=["message"])) == []
    whole = parent.fork_session("whole", from_anchor="phase/two")  # without one, everything from the anchor on
    assert [e.payload for e in whole.read() if "forked_from" in e.meta] == [e.payload for e in parent.read(8)]
    lineage = [orjson.loads(line) for line in (tmp_path / "session_graph.jsonl").read_bytes().splitlines()]
    assert lineage[0] == {**lineage[0], "parent": "parent", "child": "child", "from_anchor": "phase/two", "from_id": 8}
    assert child.lineage() == lineage[:1] and parent.lineage() == lineage
    assert "session_graph" not in FileTapeStore(tmp_path).list_tapes()


def test_fork_session_without_an_anchor_copies_all_and_bootstraps(tape: Tape) -> None:
    tape.append_message(user("a"))
    child = tape.fork_session("child")
    assert contents(child.read()) == ["a", "session/start", "handoff"]
    with pytest.raises(TapeError, match="'child'"):
        tape.fork_session("child")
    with pytest.raises(TapeNameError, match=r"'\.\./x'"):
        tape.fork_session("../x")


def test_addresses_resolve_to_entries(tape: Tape) -> None:
    build_phases(tape)
    assert tape.resolve("tape://t/entry/6").payload == user("b")
    assert tape.resolve("tape://t/anchor/phase/one").id == 11
    assert tape.resolve(tape.address(tape.get(3))) == tape.get(3)
    assert tape.resolve(tape.anchor_address("memory/open")).id == 14
    other = open_tape("other", store=tape._base_store)
    other.append_message(user("elsewhere"))
    assert tape.resolve("tape://other/entry/1").payload == user("elsewhere")


@pytest.mark.parametrize(
    ("address", "error", "quoted"),
    [
        ("http://t/entry/1", TapeAddressError, "'http://t/entry/1'"),
        ("tape://t/line/1", TapeAddressError, "'tape://t/line/1'"),
        ("tape://t/entry/one", TapeAddressError, "'one'"),
        ("tape://t/entry/99", EntryNotFoundError, "99"),
        ("tape://t/anchor/phase/none", AnchorNotFoundError, "'phase/none'"),
        ("tape://nowhere/entry/1", EntryNotFoundError, "'nowhere'"),
    ],
)
def test_addresses_that_resolve_to_nothing_say_why(tape: Tape, address: str, error: type, quoted: str) -> None:
    build_phases(tape)
    with pytest.raises(error) as caught:
        tape.resolve(address)
    assert quoted in str(caught.value)


def test_secrets_never_reach_the_tape(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "plain-configured-key-123456")
    shaped = "sk-proj-" + "A1b2C3d4" * 5
    tape = open_tape("t", store=FileTapeStore(tmp_path))
    tape.append_message(user(f"my key is {shaped} ok"))
    tape.append_tool_result([{"env": "plain-configured-key-123456", "nested": [shaped]}], token=shaped)
    tape.append_event("config", {shaped: "as a key", "tuple": ("plain-configured-key-123456",)})
    tape.handoff("phase/x", {"summary": f"used {shaped}"})
    data = tape.path.read_bytes()  # type: ignore[union-attr]
    assert shaped.encode() not in data and b"plain-configured-key-123456" not in data
    assert b"[redacted]" in data and b"my key is [redacted] ok" in data
    assert all(shaped not in str(e) for e in tape.read())
