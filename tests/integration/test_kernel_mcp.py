"""MCP servers in a real kernel: ■ stops a call in flight at once, and the wait for a server's approval however it
lands, and restarting or shutting the kernel down leaves no server process behind."""

from __future__ import annotations

import json
import sys
import time
import uuid
from pathlib import Path

import pytest
from harness.kernel import kernel_environment, running_kernel, wait_for_file
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


def test_one_interrupt_stops_a_wait_for_a_servers_approval_even_inside_a_widget_message(tmp_path: Path) -> None:
    marker, started, release = uuid.uuid4().hex, tmp_path / "started", tmp_path / "release"
    config = {"mcpServers": {"beside": {"command": sys.executable, "args": [str(HOSTILE), "tools", marker]}}}
    (tmp_path / ".mcp.json").write_text(json.dumps(config))
    with running_kernel(tmp_path, kernel_environment(tmp_path / "home")) as kernel:
        other = kernel.slow_widget(started, release)
        between_cells = kernel.value("repr(get_ipython().kernel.saved_sigint_handler)")
        sent = kernel.send_from_lab("%%bub\nhi")
        queued = kernel.send_from_lab("after = 'ran'", cell_id="cell-2")
        kernel.waiting_on(kernel.button("Approve"))  # the cell asks whether 'beside' may start
        kernel.click(other)
        wait_for_file(started)  # the kernel is inside the handler of a widget's message
        kernel.interrupt()
        release.touch()
        sent_reply, queued_reply = kernel.replies([sent, queued])  # the wait would last until a click
        assert sent_reply["status"] == "error" and sent_reply["ename"] == "KeyboardInterrupt"
        assert queued_reply["status"] == "aborted"
        assert processes_with(marker) == []
        assert kernel.value("repr(get_ipython().kernel.saved_sigint_handler)") == between_cells
        assert not (tmp_path / "home" / "mcp-approvals.json").exists()  # no answer was given
