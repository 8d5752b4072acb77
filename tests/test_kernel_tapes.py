"""Forks and archives as a user types them, in a real Jupyter kernel."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.manager import start_new_kernel

from bub_nb.tape import open_tape


class Kernel:
    """A real kernel; ``run`` sends one cell and returns its reply status and everything it showed."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def run(self, code: str) -> tuple[str, str]:
        shown: list[str] = []

        def collect(message: dict[str, Any]) -> None:
            content = message["content"]
            if message["msg_type"] == "stream":
                shown.append(content["text"])
            elif message["msg_type"] in ("display_data", "execute_result"):
                data = content["data"]
                shown.append(data.get("text/markdown") or data.get("text/plain") or "")
            elif message["msg_type"] == "error":
                shown.append(f"{content['ename']}: {content['evalue']}")

        reply = self.client.execute_interactive(code, output_hook=collect, timeout=60)
        return reply["content"]["status"], "\n".join(shown)

    def ok(self, code: str) -> str:
        status, shown = self.run(code)
        assert status == "ok", shown
        return shown


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[Kernel]:
    env = {**os.environ, "BUB_HOME": str(tmp_path / "home"), "BUB_MODEL": "offline"}
    env.pop("JPY_SESSION_NAME", None)
    manager, client = start_new_kernel(kernel_name="python3", cwd=str(tmp_path), env=env)
    try:
        yield Kernel(client)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


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
    status, shown = kernel.run("%handoff phase/x summary=nope")
    assert status == "error" and "UsageError" in shown and "read-only" in shown
    assert "Now on tape" in kernel.ok(f"%tape use {archive.name}")  # the file name alone, under the tapes home
    assert "Before the reset" in kernel.ok("%tape search Before")
    assert archive.read_bytes() == before
