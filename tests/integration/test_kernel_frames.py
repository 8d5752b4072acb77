"""A long tape framed and searched as a user types it in a real kernel: interrupted mid-frame, then run again."""

from __future__ import annotations

import json
from pathlib import Path

from harness.kernel import Kernel, wait_for_file

from bub_nb.tape import open_tape
from bub_nb.testing import OpenAICompatibleServer

ROWS = 60_000


def grow(kernel: Kernel, rows: int) -> None:
    """Append ``rows`` entries to the notebook's tape behind the kernel's back, as another writer would."""
    path = kernel.tape.path
    assert path is not None
    first = kernel.tape.last_id + 1
    lines = []
    for entry_id in range(first, first + rows):
        turn = entry_id % 5
        if entry_id % 1000 == 0:
            kind, payload = "anchor", {"name": f"phase/{entry_id}", "state": {"summary": "done"}}
        elif turn == 0:
            usage = {"prompt_tokens": 100, "completion_tokens": 7}
            kind, payload = "event", {"name": "run", "data": {"status": "ok", "usage": usage}}
        elif turn == 1:
            kind, payload = (
                "tool_call",
                {"calls": [{"id": "c", "function": {"name": "tape_search", "arguments": "{}"}}]},
            )
        else:
            kind, payload = "message", {"role": "user", "content": f"question {entry_id}"}
        meta = {"run_id": f"run-{entry_id // 5}"}
        lines.append(json.dumps({"id": entry_id, "kind": kind, "payload": payload, "meta": meta, "date": "2026-01-01"}))
    lines[10] = lines[10].replace("question", "needle question")
    with path.open("a") as handle:
        handle.write("\n".join(lines) + "\n")


def test_an_interrupted_frame_leaves_the_tape_and_the_collector_and_frames_again(
    kernel: Kernel, openai_server: OpenAICompatibleServer, tmp_path: Path
) -> None:
    openai_server.reply("Hello.")
    assert kernel.run("%%bub\nhi")[0]["status"] == "ok"
    grow(kernel, ROWS)
    path = kernel.tape.path
    assert path is not None
    before = path.read_bytes()
    expected = open_tape(path).to_frame()
    wanted = [True, len(expected), int(expected["prompt_tokens"].sum()), expected["phase"].nunique(), 1]
    assert wanted[1] > ROWS and wanted[3] > ROWS // 1000 - 1  # the grown rows and their phases are there

    framing = tmp_path / "framing"
    (sent,) = kernel.queue(
        [f"import gc, pathlib\nfor n in range(1000):\n    frame = %tape df\n    pathlib.Path({str(framing)!r}).touch()"]
    )
    wait_for_file(framing)  # one frame is done: the cell frames again and again until the interrupt
    kernel.manager.interrupt_kernel()
    (reply,) = kernel.replies([sent])
    assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt", reply
    assert path.read_bytes() == before

    for _ in range(2):  # the same cells, run again
        reply, outputs = kernel.run(
            "frame = %tape df\nhits = %tape search needle\n"
            "print(gc.isenabled(), len(frame), int(frame['prompt_tokens'].sum()), frame['phase'].nunique(), len(hits))"
        )
        assert reply["status"] == "ok", reply
        printed = "".join(o.get("text", "") for o in outputs if o["type"] == "stream").split()
        assert printed == [str(value) for value in wanted]  # the collector is back on; the frame is whole
    assert path.read_bytes() == before
