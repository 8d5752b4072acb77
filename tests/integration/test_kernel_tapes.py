"""Forks and archives as a user types them, in a real Jupyter kernel."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from harness.kernel import Kernel, kernel_environment, running_kernel

from bub_nb.tape import open_tape


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[Kernel]:
    """An offline kernel in which each test loads bub_nb itself, as a user's first cell does."""
    with running_kernel(tmp_path, load=False) as running:
        yield running


def test_a_fork_with_an_intention_keeps_the_anchor_state_the_history_and_the_memory(
    kernel: Kernel, tmp_path: Path
) -> None:
    kernel.ok("%load_ext bub_nb")
    kernel.ok("get_ipython().find_magic('tape').__self__.session.tape.memory.save_long_term('the class uses pandas')")
    kernel.ok("%%bub\nWhat is a tape?")
    kernel.ok("%handoff lesson/1 summary='tapes are append-only'")
    kernel.ok("%%bub\nAnd an anchor?")
    shown = kernel.ok("%tape fork side --from lesson/1 --intention 'try X'")
    assert "starts at anchor intention (next_steps, summary)" in shown and "memory v1" in shown
    side = open_tape("side", home=tmp_path / "home")
    view = side.view()
    assert view.anchor is not None and view.anchor.state == {"summary": "tapes are append-only", "next_steps": "try X"}
    assert [m["content"] for m in view.messages if m["role"] == "user"] == ["And an anchor?"]
    assert f"holds {len(view.messages)} messages" in shown
    assert side.memory.read().long_term == "the class uses pandas"
    kernel.ok("%%bub\nGo on")
    system = [e for e in side.read() if e.kind == "system"][-1]
    assert "the class uses pandas" in system.payload["content"]


def test_tape_use_opens_an_archive_read_only(kernel: Kernel, tmp_path: Path) -> None:
    kernel.ok("%load_ext bub_nb")
    kernel.ok("%%bub\nBefore the reset")
    shown = kernel.ok("%tape reset --archive")
    archive = Path(shown.split("archived at `")[1].split("`")[0])
    before = archive.read_bytes()
    assert "Now on tape" in kernel.ok(f"%tape use {archive}")
    status, shown = kernel.outcome("%handoff phase/x summary=nope")
    assert status == "error" and "UsageError" in shown and "read-only" in shown
    assert "Now on tape" in kernel.ok(f"%tape use {archive.name}")  # the file name alone, under the tapes home
    assert "Before the reset" in kernel.ok("%tape search Before")
    assert archive.read_bytes() == before


def test_a_fork_from_an_earlier_decision_goes_back_to_it_cites_its_own_entries_and_rebuilds_its_turns(
    kernel: Kernel, tmp_path: Path
) -> None:
    kernel.ok("%load_ext bub_nb")
    kernel.ok("%%bub\nFact 1: the class uses pandas")
    name = kernel.value("get_ipython().find_magic('tape').__self__.session.tape.name")
    parent = open_tape(name, home=tmp_path / "home")
    fact = next(e for e in parent.read() if e.kind == "message" and "Fact 1" in str(e.payload))
    kernel.ok(f"%handoff decision/1 summary='Fact 1 says pandas [#{fact.id}].'")
    kernel.ok("%%bub\nWork under the first decision")
    kernel.ok("%%bub\nMore work under the first decision")
    kernel.ok("%handoff decision/2 summary='Chose polars instead.'")
    kernel.ok("%%bub\nWork under the second decision")
    kernel.ok("%tape fork retry --from decision/1 --intention 'try duckdb'")
    side = open_tape("retry", home=tmp_path / "home")
    view = side.view()
    assert view.anchor is not None and view.anchor.name == "intention"
    assert "Work under the second decision" not in str(view.messages)  # the fork went back to decision/1
    assert "More work under the first decision" in str(view.messages)
    # the summary the intention carries cites the parent's entry, which the fork did not copy, by its address
    assert view.anchor.state is not None and "Fact 1 says pandas" in view.anchor.state["summary"]
    assert f"[{parent.address(fact.id)}]" in view.anchor.state["summary"]
    shown = kernel.ok("%context --diff turn:-2 turn:-1")
    assert "Context diff turn #" in shown and "2 stayed" in shown


def test_a_fork_renumbers_the_citations_of_the_summaries_it_copies(kernel: Kernel, tmp_path: Path) -> None:
    kernel.ok("%load_ext bub_nb")
    kernel.ok("%%bub\nFact 1: the class uses pandas")
    name = kernel.value("get_ipython().find_magic('tape').__self__.session.tape.name")
    parent = open_tape(name, home=tmp_path / "home")
    fact = next(e for e in parent.read() if e.kind == "message" and "Fact 1" in str(e.payload))
    kernel.ok(f"%handoff decision/1 summary='Fact 1 says pandas [#{fact.id}].'")
    kernel.ok("%tape fork copy")  # the whole tape, from the top
    kernel.ok("%tape fork part --from decision/1")  # from the copy, only the decision on
    whole = open_tape("copy", home=tmp_path / "home")
    summary = whole.find_anchor("decision/1").state or {}
    cited = int(summary["summary"].split("[#")[1].split("]")[0])
    assert "Fact 1" in str(whole.get(cited).payload)
    part = open_tape("part", home=tmp_path / "home")
    assert f"[{whole.address(cited)}]" in str(part.find_anchor("decision/1").state)  # the fact was not copied


def test_a_renamed_notebook_says_its_tape_is_new_and_how_to_continue_the_old_one(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (tmp_path / "Untitled.ipynb").write_text("{}")
    with running_kernel(tmp_path, kernel_environment(home, JPY_SESSION_NAME=str(tmp_path / "Untitled.ipynb"))) as k:
        k.ok("%%bub\nFact 1: the trip starts in Lyon")
        old = k.value("get_ipython().find_magic('tape').__self__.session.tape.name")
        entries = len(open_tape(old, home=home))
    (tmp_path / "Untitled.ipynb").rename(tmp_path / "trip-lesson.ipynb")
    with running_kernel(tmp_path, kernel_environment(home, JPY_SESSION_NAME=str(tmp_path / "trip-lesson.ipynb"))) as k:
        shown = k.ok("%%bub\nWhere does the trip start?")
        assert "new, empty tape" in shown and "`Untitled.ipynb` in this folder is gone" in shown
        assert f"`%tape use {old}` continues that tape" in shown and f"holds {entries} entries" in shown
        assert "new, empty tape" not in k.ok("%%bub\nAnd then?")  # said once
        assert "Now on tape" in k.ok(f"%tape use {old}")
        assert "Fact 1" in k.ok("%context")
