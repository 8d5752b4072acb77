"""The kernel tools in a real Jupyter kernel: the endpoint inspects a DataFrame, code waits for a click
that a frontend sends as a comm message, a headless kernel refuses code, and ■ stops code that runs long."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harness.kernel import Kernel, kernel_environment, running_kernel, shown_text, wait_for_file

from bub_nb.tape import TapeEntry
from bub_nb.testing import OpenAICompatibleServer

FRAME = (
    "import pandas as pd\nsales = pd.DataFrame({'region': ['north', 'south'], 'units': [12, 7], 'price': [2.5, 4.0]})"
)
ADD = "counter += 41\nprint('now', counter)"


@pytest.fixture
def kernel(tmp_path: Path, openai_server: OpenAICompatibleServer) -> Iterator[Kernel]:
    env = kernel_environment(
        tmp_path / "home",
        BUB_MODEL="openai:test-model",
        BUB_API_BASE=openai_server.base_url,
        BUB_API_KEY="test-key-not-secret",
    )
    with running_kernel(tmp_path, env) as running:
        yield running


def outputs_of(kernel: Kernel, msg_id: str, timeout: float = 60) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The reply to a cell sent with ``send_from_lab``, and what it showed (including what was seen before)."""
    reply = kernel.client.get_shell_msg(timeout=timeout)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = kernel.client.get_shell_msg(timeout=timeout)
    while not any(idle_after(message, msg_id) for message in kernel.seen):  # idle comes after the cell's outputs
        kernel.seen.append(kernel.client.get_iopub_msg(timeout=timeout))
    outputs = [
        {"type": m["msg_type"], **m["content"]}
        for m in kernel.seen
        if m["parent_header"].get("msg_id") == msg_id
        and m["msg_type"] in ("display_data", "update_display_data", "stream", "execute_result", "error")
    ]
    return reply["content"], outputs


def idle_after(message: dict[str, Any], msg_id: str) -> bool:
    return (
        message["msg_type"] == "status"
        and message["parent_header"].get("msg_id") == msg_id
        and (message["content"]["execution_state"] == "idle")
    )


def events(entries: list[TapeEntry], name: str) -> list[TapeEntry]:
    return [entry for entry in entries if entry.kind == "event" and entry.name == name]


def test_the_endpoint_inspects_a_dataframe_and_learns_its_columns_and_dtypes(
    kernel: Kernel, openai_server: OpenAICompatibleServer
) -> None:
    kernel.ok(FRAME)
    openai_server.reply_tool_calls([{"name": "notebook_inspect", "arguments": {"name": "sales"}}])
    openai_server.reply("sales has region (text), units (int64) and price (float64).")
    shown = kernel.ok("%%bub\nwhat columns does sales have?")
    assert "sales has region (text), units (int64) and price (float64)." in shown

    received = openai_server.last_request["messages"][-1]
    assert received["role"] == "tool"
    for line in ("- region: ", "- units: int64", "- price: float64", "2 rows × 3 columns"):
        assert line in received["content"]
    entries = kernel.tape.read()
    call = next(e for e in entries if e.kind == "tool_call").payload["calls"][0]["function"]
    assert (call["name"], json.loads(call["arguments"])) == ("notebook_inspect", {"name": "sales"})
    result = next(e for e in entries if e.kind == "tool_result").payload["results"][0]
    assert result == received["content"]
    answer = [e for e in entries if e.kind == "message" and e.payload["role"] == "assistant"][-1]
    assert answer.payload["content"].startswith("sales has region")


def test_a_headless_kernel_refuses_code_runs_nothing_and_tells_the_model(
    kernel: Kernel, openai_server: OpenAICompatibleServer, tmp_path: Path
) -> None:
    marker = tmp_path / "written-by-the-model"
    code = f"open({str(marker)!r}, 'w').write('ran')\nchanged = 1"
    openai_server.reply_tool_calls([{"name": "python_run", "arguments": {"code": code}}])
    openai_server.reply("I was not allowed to run it.")
    kernel.ok("%config BubMagics.allow_code = True")
    kernel.ok("%%bub\nwrite the file")  # jupyter_client names no cell: nbclient and papermill send the same

    assert not marker.exists() and kernel.value("'changed' in globals()") is False
    refusal = json.loads(openai_server.last_request["messages"][-1]["content"])
    assert refusal["kind"] == "refused" and "Nothing ran" in refusal["message"]
    assert not events(kernel.tape.read(), "notebook.cell")


@pytest.mark.parametrize("answer", ["Approve", "Deny"])
def test_code_waits_for_the_click_in_the_cell(
    kernel: Kernel, openai_server: OpenAICompatibleServer, answer: str
) -> None:
    kernel.ok("counter = 1")
    openai_server.reply_tool_calls([{"name": "python_run", "arguments": {"code": ADD}}])
    openai_server.reply("Done." if answer == "Approve" else "Left alone.")
    sent = kernel.send_from_lab("%%bub --tools python.run\nadd 41 to counter")
    comm = kernel.button(answer)
    kernel.waiting_on(comm)  # the turn waits for the click; it has asked the model once and run nothing
    assert len(openai_server.requests) == 1
    kernel.click(comm)
    reply, outputs = outputs_of(kernel, sent)

    assert reply["status"] == "ok", reply
    shown = shown_text(outputs)
    result = openai_server.last_request["messages"][-1]["content"]
    if answer == "Approve":
        assert kernel.value("counter") == 42
        assert "now 42" in shown and "stdout:\nnow 42" in result
        (cell,) = events(kernel.tape.read(), "notebook.cell")
        assert cell.payload["data"]["source"] == ADD
    else:
        assert kernel.value("counter") == 1
        assert json.loads(result)["kind"] == "denied" and "now 42" not in shown
        assert not events(kernel.tape.read(), "notebook.cell")


def test_interrupting_long_code_stops_the_turn_and_the_queued_cells(
    kernel: Kernel, openai_server: OpenAICompatibleServer, tmp_path: Path
) -> None:
    kernel.ok('%config BubMagics.allow_code = "always"')
    sleeping = tmp_path / "sleeping"
    code = f"import pathlib, time\npathlib.Path({str(sleeping)!r}).touch()\ntime.sleep(60)"
    openai_server.reply_tool_calls([{"name": "python_run", "arguments": {"code": code}}])
    sent = kernel.queue(["%%bub\nsleep a minute", "after = 'ran'"])
    wait_for_file(sleeping)  # the code is sleeping now
    kernel.manager.interrupt_kernel()
    replies = kernel.replies(sent, timeout=30)  # the code would sleep a minute: only the interrupt ends it sooner
    assert replies[0]["status"] == "error" and replies[0]["ename"] == "KeyboardInterrupt"
    assert replies[1]["status"] == "aborted"
    assert kernel.value("'after' in globals()") is False
    entries = kernel.tape.read()
    result = next(e for e in entries if e.kind == "tool_result").payload["results"][0]
    assert result["kind"] == "interrupted"
    assert events(entries, "run")[-1].payload["data"]["status"] == "interrupted"
    assert len(openai_server.requests) == 1


def test_interrupting_a_consent_that_waits_stops_the_turn(
    kernel: Kernel, openai_server: OpenAICompatibleServer
) -> None:
    between_cells = kernel.value("repr(get_ipython().kernel.saved_sigint_handler)")
    openai_server.reply_tool_calls([{"name": "python_run", "arguments": {"code": "waited = True"}}])
    sent = kernel.send_from_lab("%%bub --tools python.run\nset waited")
    queued = kernel.send_from_lab("after = 'ran'", cell_id="cell-2")  # Run All sent it with the first
    kernel.waiting_on(kernel.button("Approve"))
    kernel.asleep_in_its_loop()  # a person presses ■ on a consent that waits
    kernel.manager.interrupt_kernel()
    reply, _ = outputs_of(kernel, sent, timeout=30)
    assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt"
    assert kernel.replies([queued])[0]["status"] == "aborted"
    assert kernel.value("'waited' in globals() or 'after' in globals()") is False
    assert events(kernel.tape.read(), "run")[-1].payload["data"]["status"] == "interrupted"
    assert kernel.value("repr(get_ipython().kernel.saved_sigint_handler)") == between_cells


@pytest.mark.parametrize("handler", ["returns", "never_returns"])
def test_an_interrupt_that_lands_while_a_widget_message_is_handled_stops_the_turn(
    kernel: Kernel, openai_server: OpenAICompatibleServer, tmp_path: Path, handler: str
) -> None:
    started = tmp_path / "started"
    release = tmp_path / ("release" if handler == "returns" else "never-created")
    other = kernel.slow_widget(started, release)
    between_cells = kernel.value("repr(get_ipython().kernel.saved_sigint_handler)")
    openai_server.reply_tool_calls([{"name": "python_run", "arguments": {"code": "waited = True"}}])
    sent = kernel.send_from_lab("%%bub --tools python.run\nset waited")
    queued = kernel.send_from_lab("after = 'ran'", cell_id="cell-2")
    kernel.waiting_on(kernel.button("Approve"))
    kernel.click(other)
    wait_for_file(started)  # the kernel is inside the handler of a widget's message
    kernel.interrupt()  # a person presses ■ once, now
    if handler == "returns":
        release.touch()
    else:
        kernel.interrupt()  # the handler holds the kernel: a second press stops it, the first stops the turn
    reply, _ = outputs_of(kernel, sent, timeout=30)  # the consent would wait for a click forever
    assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt"
    assert kernel.replies([queued])[0]["status"] == "aborted"
    assert kernel.value("'waited' in globals() or 'after' in globals()") is False
    assert events(kernel.tape.read(), "run")[-1].payload["data"]["status"] == "interrupted"
    assert kernel.ok("print('still answers')").strip() == "still answers"
    assert kernel.value("repr(get_ipython().kernel.saved_sigint_handler)") == between_cells


def test_a_repr_that_sleeps_or_raises_does_not_hold_or_fail_the_turn(
    kernel: Kernel, openai_server: OpenAICompatibleServer
) -> None:
    kernel.ok(
        "import time\nclass Slow:\n    def __repr__(self):\n        time.sleep(120)\n        return 'slow'\n"
        "class Broken:\n    def __repr__(self):\n        raise ValueError('no repr for you')\n"
        "things = [Slow(), Broken()]\nslow = Slow()"
    )
    openai_server.reply_tool_calls(
        [
            {"name": "notebook_inspect", "arguments": {"name": "slow"}},
            {"name": "notebook_inspect", "arguments": {"name": "things"}},
        ]
    )
    openai_server.reply("Some values would not describe themselves.")
    shown = kernel.ok("%%bub\nlook at slow and things", timeout=60)  # a repr that ran to its end would take 2 min
    assert "Some values would not describe themselves." in shown
    slow, things = (m["content"] for m in openai_server.last_request["messages"][-2:])
    assert "did not finish within 2 s" in slow
    assert "did not finish within 2 s" in things and "ValueError: no repr for you" in things
