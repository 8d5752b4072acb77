"""Summaries, replay, diffs and budgets as a user types them in a real kernel: interrupted, then run again."""

from __future__ import annotations

from harness.kernel import Kernel, wait_for_requests

from bub_nb.tape import open_tape
from bub_nb.testing import OpenAICompatibleServer


def interrupt(kernel: Kernel, server: OpenAICompatibleServer, cell: str) -> dict[str, object]:
    """Run ``cell`` against an endpoint that answers too late, press ■ once it asked, and return the reply."""
    server.delay(20, "an answer that comes too late")
    asked = len(server.requests)
    (sent,) = kernel.queue([cell])
    wait_for_requests(server, asked + 1)
    kernel.manager.interrupt_kernel()
    (reply,) = kernel.replies([sent])
    return reply


def test_an_interrupted_summary_writes_nothing_and_runs_again(
    kernel: Kernel, openai_server: OpenAICompatibleServer
) -> None:
    openai_server.reply("We chose weekly buckets.")
    assert kernel.run("%%bub\nHow do we bucket the dates?")[0]["status"] == "ok"
    before = kernel.tape.path.read_bytes() if kernel.tape.path else b""

    reply = interrupt(kernel, openai_server, "%handoff phase/2 --summarize")
    assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt", reply
    assert kernel.tape.path is not None and kernel.tape.path.read_bytes() == before

    last = kernel.tape.last_id
    openai_server.reply(f"Summary:\nWeekly buckets were chosen [#{last - 1}].")
    reply, _ = kernel.run("%handoff phase/2 --summarize")  # the same cell, run again
    assert reply["status"] == "ok", reply
    state = kernel.tape.find_anchor("phase/2").state
    assert state is not None and state["sources"] and all(i <= last for i in state["sources"])


def test_an_interrupted_replay_leaves_the_source_and_a_rerun_makes_a_fresh_fork(
    kernel: Kernel, openai_server: OpenAICompatibleServer
) -> None:
    for answer, prompt in (("One.", "first"), ("Two.", "second")):
        openai_server.reply(answer)
        assert kernel.run(f"%%bub\n{prompt}")[0]["status"] == "ok"
    source = kernel.tape
    assert source.path is not None
    before = source.path.read_bytes()

    reply = interrupt(kernel, openai_server, "rows = %tape replay -m openai:test-model")
    assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt", reply
    assert source.path.read_bytes() == before

    openai_server.reply("One again.").reply("Two again.")
    reply, outputs = kernel.run("rows = %tape replay -m openai:test-model\nprint(rows.attrs['fork'], len(rows))")
    assert reply["status"] == "ok", reply
    fork_name, count = "".join(o.get("text", "") for o in outputs if o["type"] == "stream").split()
    assert fork_name.endswith("__replay__openai-test-model-2") and count == "2"  # the interrupted one kept its name
    assert source.path.read_bytes() == before
    assert len(open_tape(fork_name, home=kernel.home)) > 0

    for cell in ("%context --diff turn:-2 turn:-1", "%context --diff turn:-2 turn:-1"):  # a rerun shows it again
        assert kernel.run(cell)[0]["status"] == "ok"
    entries = len(source)
    for _ in range(2):
        reply, _ = kernel.run("%%bub --budget 5\nand now?")
        assert (reply["status"], reply.get("ename")) == ("error", "UsageError") and "budget of 5" in reply["evalue"]
    assert len(source) == entries
