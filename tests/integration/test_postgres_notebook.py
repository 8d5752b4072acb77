"""A notebook on a shared database: %config BubMagics.store in a real kernel, and the class overview widget."""

from __future__ import annotations

import os
import queue
from pathlib import Path
from typing import Any

import pytest
from harness.tapes import postgres_server, postgres_store
from jupyter_client.manager import start_new_kernel

from bub_nb import class_overview, open_tape
from bub_nb.notebook.widgets import ClassOverview
from bub_nb.testing.postgres import SUPERUSER_PASSWORD


def run_cells(client: Any, cells: list[str]) -> list[str]:
    """Run cells one by one; the text each one showed (stream, results and errors)."""
    shown = []
    for code in cells:
        msg_id = client.execute(code)
        text = []
        while True:
            try:
                message = client.get_iopub_msg(timeout=60)
            except queue.Empty:
                pytest.fail(f"The kernel went quiet running {code!r}")
            if message["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = message["msg_type"], message["content"]
            if kind == "stream":
                text.append(content["text"])
            elif kind in ("execute_result", "display_data"):
                text.append(str(content["data"].get("text/plain", "")) + str(content["data"].get("text/markdown", "")))
            elif kind == "error":
                text.append(f"{content['ename']}: {content['evalue']}")
            elif kind == "status" and content["execution_state"] == "idle":
                break
        shown.append("".join(text))
    return shown


def test_a_kernel_configured_with_a_dsn_keeps_its_turns_in_the_database(tmp_path: Path) -> None:
    server = postgres_server()
    dsn = server.create_database("notebook")
    env = {**os.environ, "BUB_HOME": str(tmp_path / "home"), "BUB_MODEL": "offline"}
    env.pop("JPY_SESSION_NAME", None)
    env.pop("BUB_STORE", None)
    manager, client = start_new_kernel(kernel_name="python3", cwd=str(tmp_path), env=env)
    try:
        shown = run_cells(
            client,
            [
                "%load_ext bub_nb",
                f"%config BubMagics.store = {dsn!r}",
                "%%bub\nHello from the classroom",
                "%tape info",
                "%config BubMagics.store = 'postgresql://nobody:wrong-secret@127.0.0.1:1/none'",
                "%tape info",
            ],
        )
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    assert "[redacted]" in shown[3] and SUPERUSER_PASSWORD not in "".join(shown)
    assert shown[5].startswith("UsageError: Tape store postgresql://nobody:[redacted]@127.0.0.1:1/none cannot be")
    assert "wrong-secret" not in shown[5] and "\n" not in shown[5].strip()
    assert not (tmp_path / "home" / "tapes").exists()  # nothing went to files
    [name] = open_tape("x", store=dsn).store.list_tapes()
    contents = [e.payload.get("content") for e in open_tape(name, store=dsn).read() if e.kind == "message"]
    assert contents[0] == "Hello from the classroom"


def test_the_class_overview_counts_turns_tokens_and_errors_per_tape(postgres: Any) -> None:
    from bub_nb.agent import Agent

    store = postgres_store()
    first = open_tape("ann", store=store)
    Agent(first, model="offline").run("hello")
    first.handoff("phase/two", {"summary": "next"})
    Agent(first, model="offline").run("and again")
    second = open_tape("ben", store=store)
    second.ensure_bootstrap_anchor()
    second.append_error("tool", "failed")

    frame = class_overview(store)
    assert list(frame["tape_name"]) == ["ann", "ben"] and list(frame["owner"]) == ["postgres", "postgres"]
    assert list(frame["turns"]) == [2, 0] and list(frame["errors"]) == [0, 1]
    assert frame["tokens"].iloc[0] > 0 and frame["tokens"].iloc[1] == 0
    assert list(frame["anchors"]) == [["session/start", "phase/two"], ["session/start"]]
    assert frame["last_activity"].notna().all()

    widget = ClassOverview(store)
    assert "2 tapes, 2 turns, 1 errors" in widget.to_text() and "<table" in widget.to_html()
    box = widget.widget
    open_tape("cleo", store=store).ensure_bootstrap_anchor()
    assert len(widget.refresh()) == 3 and "cleo" in box.children[1].value
