"""bub_nb in a real Jupyter kernel, with cells queued the way JupyterLab's Run All sends them."""

from __future__ import annotations

import queue
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness.kernel import Kernel, running_kernel

QUEUED_CELLS = [
    "%load_ext bub_nb",
    "%%bub\nHello from a queued cell",
    "%handoff lesson/1 summary='queued handoff'",
    "from bub_nb import Agent\nturn = Agent(get_ipython().find_magic('tape').__self__.session.tape).run('API turn')",
    "%%bub\nAnd another one",
    "print('every cell ran')",
]


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[Kernel]:
    """An offline kernel whose first queued cell loads bub_nb, as a notebook's does."""
    with running_kernel(tmp_path, load=False) as running:
        yield running


def test_cells_queued_after_a_turn_all_run(kernel: Kernel) -> None:
    client = kernel.client
    sent = [client.execute(code) for code in QUEUED_CELLS]
    replies = {}
    while len(replies) < len(sent):
        try:
            reply = client.get_shell_msg(timeout=30)
        except queue.Empty:
            missing = [QUEUED_CELLS[i].splitlines()[0] for i, msg_id in enumerate(sent) if msg_id not in replies]
            pytest.fail(f"The kernel went quiet; these queued cells never ran: {missing}")
        if reply["parent_header"].get("msg_id") in sent:  # not the late reply to the start-up kernel_info
            replies[reply["parent_header"]["msg_id"]] = reply["content"]
    statuses = [replies[msg_id]["status"] for msg_id in sent]
    errors = [f"{r.get('ename')}: {r.get('evalue')}" for r in replies.values() if r["status"] != "ok"]
    assert statuses == ["ok"] * len(QUEUED_CELLS), errors
