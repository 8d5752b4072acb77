"""The model fault matrix, through ``%%bub`` on a real InteractiveShell against a local OpenAI-compatible endpoint.

Every fault must leave the user's prompt and an ``error`` entry on the tape, a shell whose next cell
runs, and at most one line for the user (a ``UsageError``, never a traceback).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from harness.shell import Cell, Notebook, loaded_shell
from IPython.core.error import UsageError

from bub_nb.agent.models import OpenAIModel
from bub_nb.testing import OpenAICompatibleServer

RETRIES = 1
TIMEOUT = 0.4
"""The model's timeout in the timeout fault; every other fault has a patient model, which a busy machine does not
trip."""
PROMPT = "Please keep this prompt: the fault matrix"


def endpoint(server: OpenAICompatibleServer, *, timeout: float, max_retries: int = RETRIES) -> OpenAIModel:
    return OpenAIModel(
        "test-model",
        api_key="sk-fault-matrix-0123456789abcdef",
        base_url=server.base_url,
        timeout=timeout,
        max_retries=max_retries,
    )


@pytest.fixture
def server() -> Iterator[OpenAICompatibleServer]:
    with OpenAICompatibleServer() as endpoint:
        yield endpoint


@pytest.fixture
def nb(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], server: OpenAICompatibleServer
) -> Iterator[Notebook]:
    monkeypatch.setenv("BUB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("BUB_API_BASE", server.base_url)
    monkeypatch.setenv("BUB_API_KEY", "sk-fault-matrix-0123456789abcdef")
    monkeypatch.setenv("BUB_MODEL", "openai:test-model")
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.chdir(tmp_path)
    with loaded_shell(capsys) as notebook:
        # the model the env names, with one retry, whose short waits (Retry-After) make faults cost milliseconds
        notebook.magics.model = "endpoint"  # a model object named in the notebook, as users pass one
        notebook.shell.user_ns["endpoint"] = endpoint(server, timeout=30)
        yield notebook


def kinds_of(entries: list[Any]) -> list[str]:
    return [entry.kind for entry in entries]


def assert_one_line_usage_error(cell: Cell, *fragments: str) -> None:
    assert isinstance(cell.error, UsageError), cell.error
    assert "Traceback" not in cell.out + cell.err
    shown = [line for line in cell.err.splitlines() if line.strip()]
    assert len(shown) == 1 and shown[0].startswith("UsageError: "), cell.err
    for fragment in fragments:
        assert fragment in shown[0], shown[0]
    assert "sk-fault-matrix" not in cell.out + cell.err


def assert_the_shell_lives_on(nb: Notebook, server: OpenAICompatibleServer) -> None:
    assert server.pending == 0, "the fault left scripted replies unused"
    cell = nb.cell("after_the_fault = 6 * 7")
    assert cell.error is None and nb.shell.user_ns["after_the_fault"] == 42
    nb.shell.user_ns["endpoint"] = endpoint(server, timeout=30, max_retries=0)  # patient, after a timeout fault
    server.reply("Back to normal.")
    cell = nb.cell("%%bub -o recovered\nAre you still there?")
    assert cell.error is None and "Traceback" not in cell.err
    assert nb.shell.user_ns["recovered"] == "Back to normal."
    assert nb.tape.read()[-1].payload["data"]["status"] == "ok"


def the_turn(nb: Notebook) -> list[Any]:
    """The entries of the last turn (those after the prompt's system entry)."""
    entries = nb.tape.read()
    start = max(i for i, e in enumerate(entries) if e.kind == "system")
    return entries[start:]


Fault = Callable[[OpenAICompatibleServer], None]

FAILING_FAULTS: dict[str, tuple[Fault, tuple[str, ...]]] = {
    "500": (lambda s: [s.fail(500) for _ in range(RETRIES + 1)], ("500",)),
    "429": (lambda s: [s.fail(429) for _ in range(RETRIES + 1)], ("429",)),
    "timeout": (lambda s: [s.delay(600) for _ in range(RETRIES + 1)], ("timed out",)),  # only the timeout answers
    "drop mid-stream": (lambda s: s.drop_after(3, "a partial answer that never reaches its end"), ("dropped",)),
    "503 then drop": (lambda s: (s.fail(503), s.drop_after(1, "cut right away")), ("dropped",)),
    "context overflow twice": (
        # the first refusal, the summary the auto-handoff asks for, the retry's refusal
        lambda s: (s.fail_context_length(), s.reply("Summary:\nOne long prompt."), s.fail_context_length()),
        ("context length",),
    ),
}


@pytest.mark.parametrize("fault", list(FAILING_FAULTS))
def test_a_failing_model_keeps_the_prompt_and_an_error_and_shows_one_line(
    nb: Notebook, server: OpenAICompatibleServer, fault: str
) -> None:
    script, fragments = FAILING_FAULTS[fault]
    script(server)
    if fault == "timeout":
        nb.shell.user_ns["endpoint"] = endpoint(server, timeout=TIMEOUT)
    cell = nb.cell(f"%%bub\n{PROMPT}")
    assert_one_line_usage_error(cell, *fragments)

    turn = the_turn(nb)
    assert {"role": "user", "content": PROMPT} in [e.payload for e in turn if e.kind == "message"]
    errors = [e for e in turn if e.kind == "error"]
    assert len(errors) == 1 and errors[0].payload["kind"] in ("model_error", "context_length_exceeded")
    assert turn[-1].payload["name"] == "run" and turn[-1].payload["data"]["status"] == "error"
    assert len({e.meta.get("run_id") for e in turn}) == 1
    if fault == "drop mid-stream":
        partial = [e for e in turn if e.kind == "message" and e.meta.get("partial")]
        assert [e.payload["content"] for e in partial] == ["a partial answer "]
        assert cell.out.startswith("a partial answer") and "cut short" in cell.out
    if fault == "context overflow twice":
        assert [e.name for e in turn if e.kind == "anchor"] == ["auto_handoff/context_overflow"]
        assert errors[0].payload["kind"] == "context_length_exceeded"
    assert_the_shell_lives_on(nb, server)


def test_one_context_overflow_recovers_through_the_auto_handoff(nb: Notebook, server: OpenAICompatibleServer) -> None:
    nb.cell("%%bub\n" + "Some long background to the fault matrix. " * 40)
    asked = max(e.id for e in nb.tape.read(kinds=("message",)) if e.payload.get("role") == "user")
    summary = f"Long background to the fault matrix [#{asked}]."  # what the cited prompt says
    server.fail_context_length().reply(f"Summary:\n{summary}").reply("Answered after the handoff.")
    cell = nb.cell(f"%%bub -o answer\n{PROMPT}")
    assert cell.error is None and cell.err == ""
    assert nb.shell.user_ns["answer"] == "Answered after the handoff."
    turn = the_turn(nb)
    expected = ["system", "message", "event", "anchor", "event", "event", "message", "message", "event"]
    assert kinds_of(turn) == expected
    assert turn[2].name == "summary" and turn[3].name == "auto_handoff/context_overflow"
    assert turn[3].payload["state"]["summary"] == summary
    assert turn[1].payload == {"role": "user", "content": PROMPT}
    assert turn[6].payload == {"role": "user", "content": PROMPT} and turn[6].meta.get("retry") is True
    assert server.last_request["messages"][-1] == {"role": "user", "content": PROMPT}
    assert turn[-1].payload["data"]["status"] == "ok"
    assert_the_shell_lives_on(nb, server)


TOOL_FAULTS = {
    "malformed arguments": ({"name": "tape_handoff", "arguments": '{"name": "phase/x", '}, "tool.invalid_input"),
    "arguments of the wrong type": ({"name": "tape_handoff", "arguments": {"name": ["not", "a", "str"]}}, None),
    "unknown tool": ({"name": "shell_exec", "arguments": {"cmd": "rm -rf /"}}, "tool.not_found"),
}


@pytest.mark.parametrize("fault", list(TOOL_FAULTS))
def test_a_bad_tool_call_becomes_an_error_result_and_the_turn_goes_on(
    nb: Notebook, server: OpenAICompatibleServer, fault: str
) -> None:
    call, kind = TOOL_FAULTS[fault]
    server.reply_tool_calls([call]).reply("I could not use that tool.")
    cell = nb.cell(f"%%bub -o answer\n{PROMPT}")
    assert cell.error is None and "Traceback" not in cell.out + cell.err and cell.err == ""
    turn = the_turn(nb)
    assert kinds_of(turn) == ["system", "message", "tool_call", "tool_result", "error", "message", "event"]
    assert turn[1].payload == {"role": "user", "content": PROMPT}
    result = turn[3].payload["results"][0]
    assert isinstance(result, dict) and result["kind"] == turn[4].payload["kind"].removeprefix("tool.")
    if kind is not None:
        assert turn[4].payload["kind"] == kind
    assert turn[4].payload["details"]["tool"] == call["name"]
    tool_message = server.last_request["messages"][-1]
    assert tool_message["role"] == "tool" and json.loads(tool_message["content"]) == result
    assert nb.shell.user_ns["answer"] == "I could not use that tool."
    assert not any(e.kind == "anchor" and e.name == "phase/x" for e in nb.tape.read())
    assert_the_shell_lives_on(nb, server)


def test_an_unreachable_endpoint_is_one_line_and_keeps_the_prompt(nb: Notebook, server: OpenAICompatibleServer) -> None:
    nb.shell.user_ns["endpoint"] = OpenAIModel(
        "test-model", api_key="sk-fault-matrix-0123456789abcdef", base_url="http://127.0.0.1:9/v1", max_retries=0
    )
    cell = nb.cell(f"%%bub\n{PROMPT}")
    assert_one_line_usage_error(cell, "could not be reached")
    turn = the_turn(nb)
    assert turn[1].payload == {"role": "user", "content": PROMPT} and kinds_of(turn)[-2:] == ["error", "event"]
    nb.shell.user_ns["endpoint"] = OpenAIModel(
        "test-model", api_key="sk-fault-matrix-0123456789abcdef", base_url=server.base_url, max_retries=0
    )
    assert_the_shell_lives_on(nb, server)
