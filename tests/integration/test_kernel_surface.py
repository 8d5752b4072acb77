"""What a user types, in a real Jupyter kernel: comma cells, ■ during Run All, a slow tool, %bub's line form.

Each test starts an IPython kernel with jupyter_client and sends cells as a frontend does; the
model is the local OpenAI-compatible endpoint, reached by the real openai client in the kernel.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.kernel import Kernel, wait_for_file, wait_for_requests

from bub_nb.tape import TapeEntry
from bub_nb.testing import OpenAICompatibleServer

SLOW_TOOL = """
import pathlib, threading, time
def slow() -> str:
    \"\"\"Wait until the test lets it return (a minute at most).\"\"\"
    global worker
    worker = threading.current_thread()
    pathlib.Path({started!r}).touch()
    for _ in range(6000):
        if pathlib.Path({release!r}).exists():
            break
        time.sleep(0.01)
    pathlib.Path({returned!r}).touch()
    return "slow result"
"""


def kinds(entries: list[TapeEntry]) -> list[str]:
    return [entry.kind for entry in entries]


# -- 1: comma cells ---------------------------------------------------------------------------------


def test_comma_cells_run_as_commands_on_the_current_tape(kernel: Kernel, openai_server: Any) -> None:
    reply, _ = kernel.run(",handoff name=phase/setup summary=loaded")
    assert reply["status"] == "ok", reply
    anchors = [e.payload for e in kernel.tape.read() if e.kind == "anchor"]
    assert [a["name"] for a in anchors] == ["session/start", "phase/setup"]
    assert anchors[1]["state"] == {"summary": "loaded"}

    reply, outputs = kernel.run(",help")
    shown = "\n".join(o.get("data", {}).get("text/plain", "") + o.get("text", "") for o in outputs)
    assert reply["status"] == "ok" and ",handoff" in shown and ",tape.info" in shown and "help(" not in shown

    reply, outputs = kernel.run(",tape.info")
    assert reply["status"] == "ok", reply
    assert "last anchor: phase/setup" in "\n".join(o.get("data", {}).get("text/plain", "") for o in outputs)
    assert openai_server.requests == []  # commands never reach the model

    kernel.run("%unload_ext bub_nb")
    reply, _ = kernel.run(",tape.info")
    assert reply["status"] == "error" and reply["ename"] == "NameError"  # IPython's own meaning again
    reply, _ = kernel.run("%%bub\nhi")
    assert reply["status"] == "error" and "bub" in reply["evalue"]


# -- 5: ■ during Run All ----------------------------------------------------------------------------


def test_interrupting_a_turn_cancels_the_queued_cells(kernel: Kernel, openai_server: OpenAICompatibleServer) -> None:
    openai_server.delay(20, "an answer that comes too late")
    sent = kernel.queue(["%%bub\nfirst question", "%%bub\nsecond question", "%%bub\nthird question"])
    wait_for_requests(openai_server, 1)
    kernel.manager.interrupt_kernel()
    first, second, third = kernel.replies(sent)
    assert first["status"] == "error" and first["ename"] == "KeyboardInterrupt"
    shown = "\n".join(first["traceback"])
    assert "nest_asyncio" not in shown and "eventloop.py" not in shown, "the interrupt shows the turn's internals"
    assert second["status"] == third["status"] == "aborted"
    assert len(openai_server.requests) == 1
    entries = kernel.tape.read()
    users = [e.payload["content"] for e in entries if e.kind == "message" and e.payload["role"] == "user"]
    assert users == ["first question"]
    assert entries[-1].payload["data"]["status"] == "interrupted"

    reply, outputs = kernel.run("print('the kernel is still usable')")
    assert reply["status"] == "ok" and "still usable" in outputs[-1]["text"]


# -- 6: a slow tool does not hold the interrupt ------------------------------------------------------


def test_a_slow_tool_does_not_hold_the_interrupt(
    kernel: Kernel, openai_server: OpenAICompatibleServer, tmp_path: Path
) -> None:
    started, release, returned = tmp_path / "started", tmp_path / "release", tmp_path / "returned"
    kernel.run(SLOW_TOOL.format(started=str(started), release=str(release), returned=str(returned)))
    openai_server.reply_tool_calls([{"name": "slow", "arguments": {}}])
    sent = kernel.queue(["%%bub --tools slow\nrun the slow tool"])
    wait_for_file(started)  # the tool is running now
    kernel.manager.interrupt_kernel()
    (reply,) = kernel.replies(sent)
    assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt"
    assert not returned.exists(), "the interrupt waited for the tool to return"

    release.touch()  # the abandoned call returns now, and must not reach the tape
    kernel.ok("worker.join(60)\nassert not worker.is_alive()")  # it returned, and handed on what it had
    kernel.ok("pass")  # what it handed the kernel's event loop has run by the time the loop runs the next cell
    entries = [e for e in kernel.tape.read() if e.meta.get("run_id")]
    assert kinds(entries) == ["system", "message", "tool_call", "tool_result", "error", "error", "event"]
    assert entries[3].payload["results"][0]["kind"] == "interrupted"
    assert [e.payload["kind"] for e in entries[4:6]] == ["tool.interrupted", "interrupted"]
    assert not any("slow result" in str(e.payload) for e in kernel.tape.read())

    # The next turn's view pairs the call with its result: the endpoint refuses any request that does not.
    openai_server.reply("Understood, the tool was interrupted.")
    reply, _ = kernel.run("%%bub\nwhat happened?")
    assert reply["status"] == "ok", reply
    roles = [m["role"] for m in openai_server.last_request["messages"]]
    assert roles[-3:] == ["assistant", "tool", "user"]


# -- 14 and 15: the line form, plain text -------------------------------------------------------------


def test_the_line_form_sends_exactly_what_was_typed(kernel: Kernel, openai_server: OpenAICompatibleServer) -> None:
    kernel.run("x = 'EXPANDED'")
    for line in ("%bub I paid $5 for it", '%bub json {"a": 1}', "%bub costs $x, not {{x}}"):
        reply, _ = kernel.run(line)
        assert reply["status"] == "ok", reply
    sent = [request["messages"][-1]["content"] for request in openai_server.requests]
    assert sent == ["I paid $5 for it", 'json {"a": 1}', "costs $x, not {x}"]


def test_answers_and_confirmations_carry_their_text_as_text_plain(
    kernel: Kernel, openai_server: OpenAICompatibleServer
) -> None:
    openai_server.reply("The **answer** itself.")
    _, outputs = kernel.run("%%bub\nquestion")
    final = [o for o in outputs if o["type"] in ("display_data", "update_display_data")][-1]["data"]
    assert final["text/plain"].startswith("The **answer** itself.")
    assert "text/markdown" not in final and "<strong>answer</strong> itself." in final["text/html"]
    _, outputs = kernel.run("%handoff phase/a summary=done")
    (shown,) = [o["data"] for o in outputs if o["type"] == "display_data"]
    assert "Handoff **phase/a**" in shown["text/plain"] and "Handoff <strong>phase/a</strong>" in shown["text/html"]
    assert not any("IPython.core.display" in str(o.get("data")) for o in outputs)


def test_context_turn_and_diff_work_as_typed(kernel: Kernel, openai_server: OpenAICompatibleServer) -> None:
    openai_server.reply("First answer.")
    kernel.run("%%bub\nHello there")
    kernel.run("%handoff phase/b summary=greeted")
    openai_server.reply("Second answer.")
    kernel.run("%%bub\nAnd now?")

    reply, outputs = kernel.run("%context --turn -1")
    assert reply["status"] == "ok", reply
    (shown,) = [o["data"] for o in outputs if o["type"] == "display_data"]
    assert "application/vnd.jupyter.widget-view+json" in shown
    sent = openai_server.last_request["messages"]
    assert [m["role"] for m in sent] == ["system", "assistant", "user"]
    text = shown["text/plain"]
    assert "Messages the turn sent" in text and "[Anchor created: phase/b]" in text and "And now?" in text
    assert "Hello there" not in text
    turn = kernel.tape.view_of_turn(-1)
    assert [m["content"] for m in turn.messages] == [m["content"] for m in sent]

    reply, outputs = kernel.run("%context --diff last full")
    assert reply["status"] == "ok", reply
    (shown,) = [o["data"] for o in outputs if o["type"] == "display_data"]
    assert "Context diff last-anchor → full" in shown["text/plain"] and "bub-entered" in shown["text/html"]

    for line in ("%context --turn -9", "%context --diff last", "%context --turn -1 --diff last full"):
        before = len(kernel.tape)
        reply, outputs = kernel.run(line)
        assert (reply["status"], reply.get("ename")) == ("error", "UsageError"), (line, reply)
        assert "\n" not in reply["evalue"].strip(), reply["evalue"]
        printed = "".join(o.get("text", "") for o in outputs if o["type"] == "stream")
        assert "Traceback" not in printed and printed.strip().count("\n") == 0, printed
        assert len(kernel.tape) == before


# -- the phases mode and the anchors' citations -------------------------------------------------------


def handoff_with_summary(kernel: Kernel, name: str) -> dict[str, Any]:
    """Close the phase with a hand-written summary citing its first message, as a summarizing handoff would."""
    tape = kernel.tape
    last = tape.last_anchor()
    first = (last.id if last else 0) + 1
    asked = next(e.id for e in tape.read(first) if e.kind == "message")
    state = {"summary": f"The user asked [#{asked}]. Then more.", "sources": [asked], "range": [first, tape.last_id]}
    state |= {"uncited": ["Then more."], "summarized_by": "test-model", "removed_citations": 0}
    reply, _ = kernel.run(f"%handoff {name} --state '{json.dumps(state)}'")
    assert reply["status"] == "ok", reply
    return state


def test_phases_context_and_anchor_citations_in_a_kernel(kernel: Kernel, openai_server: OpenAICompatibleServer) -> None:
    kernel.run("%%bub\nFirst question")
    first = handoff_with_summary(kernel, "phase/1")
    kernel.run("%%bub\nSecond question")
    second = handoff_with_summary(kernel, "phase/2")

    reply, _ = kernel.run("%%bub --context phases\nWhere are we?")
    assert reply["status"] == "ok", reply
    sent = [m["content"] for m in openai_server.requests[-1]["messages"][1:]]
    assert sent[0].startswith("[Earlier phase: session/start")
    assert sent[1].startswith("[Earlier phase: phase/1") and f": {first['summary']}" in sent[1]
    assert sent[2].startswith("[Anchor created: phase/2]") and second["summary"] in sent[2]
    assert sent[-1] == "Where are we?"

    reply, outputs = kernel.run("%anchors")
    (table,) = [o["data"]["text/html"] for o in outputs if o["type"] == "execute_result"]
    assert "<th>sources</th>" in table and "<th>uncited</th>" in table
    columns = "['name', 'sources', 'uncited']"
    reply, outputs = kernel.run(f"listed = %anchors\nprint(listed[{columns}].to_json(orient='records'))")
    rows = {row.pop("name"): row for row in json.loads("".join(o["text"] for o in outputs if o["type"] == "stream"))}
    assert rows["phase/2"] == {"sources": second["sources"], "uncited": 1}
    assert rows["session/start"] == {"sources": [], "uncited": None}

    reply, outputs = kernel.run("%context")
    shown = "\n".join(o.get("data", {}).get("text/plain", "") for o in outputs)
    assert f"cited by phase/2: #{second['sources'][0]}" in shown
