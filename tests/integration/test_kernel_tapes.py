"""Forks and archives as a user types them, in a real Jupyter kernel."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from harness.kernel import Kernel, running_kernel

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
    assert "starts at ⚓ intention (next_steps, summary)" in shown and "memory v1" in shown
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
