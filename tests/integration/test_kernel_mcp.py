"""MCP servers in a real kernel: ■ stops a call in flight at once, and restarting or shutting the kernel down leaves
no server process behind."""

from __future__ import annotations

import sys
import time
import uuid
from pathlib import Path

import pytest
from harness.kernel import kernel_environment, running_kernel
from harness.processes import processes_with

pytest.importorskip("mcp")

HOSTILE = Path(__file__).parents[1] / "harness" / "hostile_mcp.py"


def test_an_interrupt_stops_a_call_in_flight_and_a_restart_leaves_no_server(tmp_path: Path) -> None:
    marker, stalling = uuid.uuid4().hex, tmp_path / "stalling"
    with running_kernel(tmp_path, kernel_environment(tmp_path / "home")) as kernel:
        kernel.ok(f"%mcp add h --env HOSTILE_STALLING={stalling} -- {sys.executable} {HOSTILE} tools {marker}")
        assert processes_with(marker)
        sent = kernel.send("%%bub\ncall mcp.h.stall {}")
        for _ in range(3000):  # until the server has the call
            if stalling.exists():
                break
            time.sleep(0.01)
        assert stalling.exists(), "the call never reached the server"
        kernel.manager.interrupt_kernel()  # the call stalls for good: only the interrupt answers the cell
        reply = kernel.client.get_shell_msg(timeout=60)
        while reply["parent_header"].get("msg_id") != sent:
            reply = kernel.client.get_shell_msg(timeout=60)
        assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "KeyboardInterrupt"
        statuses = [e.payload["data"]["status"] for e in kernel.tape.read() if e.kind == "event" and e.name == "run"]
        assert statuses == ["interrupted"]
        kernel.drain()

        kernel.manager.restart_kernel(now=False)  # Restart Kernel: the old process exits, and its servers with it
        for _ in range(1000):
            if not processes_with(marker):
                break
            time.sleep(0.02)
        assert processes_with(marker) == []
