"""What a model replies is input: it can neither erase the tape nor cite more entries than the tape holds."""

from __future__ import annotations

import dataclasses
import tracemalloc
from pathlib import Path

import pytest
from harness.shell import Notebook
from harness.tapes import bub_read

from bub_nb.agent import Agent, ScriptedModel
from bub_nb.agent.replay import replay
from bub_nb.errors import CitationError
from bub_nb.notebook.display import footer
from bub_nb.tape import FileTapeStore, Tape
from bub_nb.tape.citations import cited_ids, state_sources
from bub_nb.tape.events import handoff_entries
from bub_nb.tape.reports.transcript import transcript_markdown

HUGE = "Everything [#1-#99999999999]."


def reset_call(archive: object = False) -> dict[str, object]:
    return {"tool_calls": [{"name": "tape_reset", "arguments": {"archive": archive}}]}


def test_a_reset_the_model_asks_for_archives_and_keeps_the_turns_prompt(tape: Tape) -> None:
    agent = Agent(tape, ScriptedModel(["hi", reset_call(False), "done"]))
    agent.run("first")
    before = {entry.id: entry.payload for entry in tape.read()}

    turn = agent.run("please reset")

    (archive,) = sorted(Path(tape.path).parent.glob("*.bak"))  # type: ignore[arg-type]
    archived = {record["id"]: record["payload"] for record in bub_read(archive)}
    assert all(archived.get(entry_id) == payload for entry_id, payload in before.items())
    prompts = [e.payload["content"] for e in tape.read(kinds=("message",)) if e.payload.get("role") == "user"]
    assert prompts == ["please reset"]
    ids = turn.entry_ids
    assert ids == sorted(ids) and ids[0] == 1 and ids[-1] == tape.last_id
    assert all(tape.get(entry_id) == entry for entry_id, entry in zip(ids, turn.entries, strict=True))
    rebuilt = tape.view_of_turn(-1)
    assert any(m.get("content") == "please reset" for m in rebuilt.messages)
    assert "#1–#" in footer(turn, None)


def test_a_models_reset_carries_earlier_steps_of_the_turn(tmp_path: Path) -> None:
    tape = Tape("steps", FileTapeStore(tmp_path))
    search = {"tool_calls": [{"name": "tape_search", "arguments": {"query": "x"}}]}
    turn = Agent(tape, ScriptedModel([search, reset_call(True), "done"])).run("look, then reset")
    kinds = [entry.kind for entry in tape.read()]
    assert kinds[:4] == ["anchor", "event", "system", "message"]
    assert kinds.count("tool_call") == 2 and turn.status == "ok"
    carried = [entry for entry in tape.read() if "carried" in entry.meta]
    assert [entry.kind for entry in carried] == ["system", "message", "tool_call", "tool_result"]


def test_the_footer_range_never_reads_backwards(tape: Tape) -> None:
    turn = Agent(tape, ScriptedModel(["hi"])).run("x")
    shuffled = dataclasses.replace(turn, entries=tuple(reversed(turn.entries)))
    assert f"entries #{turn.entry_ids[0]}–#{turn.entry_ids[-1]}" in footer(shuffled, None)


def test_a_replay_refuses_a_reset_so_its_rows_still_point_at_the_fork(tape: Tape) -> None:
    Agent(tape, ScriptedModel(["one", "two"])).run("first")
    Agent(tape, ScriptedModel(["two"])).run("second")
    model = ScriptedModel(["again one", reset_call(False), "again two"])
    frame = replay(tape, model=model)
    fork = Tape(frame.attrs["fork"], tape.base_store)
    for row in frame.itertuples():
        assert fork.get(int(row.replay_id)).payload["content"] == row.prompt
    results = fork.read(kinds=("tool_result",))
    assert "refused while a session is replayed" in str(results[-1].payload)


def test_a_handoff_citing_past_the_tape_is_refused_and_writes_nothing(tape: Tape) -> None:
    tape.ensure_bootstrap_anchor()
    count = len(tape)
    with pytest.raises(CitationError, match=r"cites \[#1-#99999999999\], beyond the tape's entries #1-#2"):
        tape.handoff("phase/a", {"summary": HUGE})
    with pytest.raises(CitationError):
        Agent(tape, ScriptedModel([])).handoff("phase/a", summarize=True, summary=HUGE)
    assert len(tape) == count
    tape.handoff("phase/b", {"summary": "Started [#1-#2]."})


def test_the_models_handoff_citing_everything_is_an_error_result(tape: Tape) -> None:
    call = {"tool_calls": [{"name": "tape_handoff", "arguments": {"name": "phase/all", "summary": HUGE}}]}
    turn = Agent(tape, ScriptedModel([call, "ok"])).run("summarize everything")
    assert turn.ok and "phase/all" not in tape.anchor_names()
    (result,) = tape.read(kinds=("tool_result",))
    assert "beyond the tape's entries" in str(result.payload)


def test_a_stored_citation_of_a_huge_range_costs_what_the_tape_holds(tape: Tape) -> None:
    tape.ensure_bootstrap_anchor()
    tape.extend(handoff_entries("phase/a", {"summary": HUGE, "next_steps": "Then [#5-#99999999999999]."}))
    tracemalloc.start()  # expanding the range would build one object per cited id: memory shows it, a clock would not
    try:
        (_, anchor) = tape.anchors()
        assert anchor.sources == (1, 2)
        assert "cites #1, #2" in anchor.to_markdown()
        assert "Everything" in transcript_markdown(tape)
        tape.view("phases")
        tape.to_frame()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 2**20
    assert len(cited_ids(HUGE)) <= 100_000 and cited_ids(HUGE, 3) == [1, 2, 3]
    assert state_sources({"sources": [1, 2, 10**12]}, 5) == (1, 2)


def test_handoff_magic_citing_past_the_tape_is_refused(nb: Notebook) -> None:
    nb.run("%handoff phase/start")
    nb.refused(f"%handoff phase/a summary='{HUGE}'", r"cites \[#1-#99999999999\]")
    nb.refused(f"%%bub\n,handoff phase/a summary='{HUGE}'", r"cites \[#1-#99999999999\]")
    nb.run("%anchors")
