"""The kernel tools over a plain namespace, through the real agent loop and the real openai client:
what a model learns about a value, what it cannot make run, and what it reads when code is refused."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from bub_nb.agent import Agent
from bub_nb.agent.kernel_tools import Decision, Limits, NamespaceKernel, describe_value, kernel_tools, resolve
from bub_nb.agent.models import OpenAIModel
from bub_nb.agent.tools import ToolRegistry
from bub_nb.errors import ToolCallError, ToolError
from bub_nb.tape import Tape
from bub_nb.testing import OpenAICompatibleServer


class SlowRepr:
    def __repr__(self) -> str:
        time.sleep(30)
        return "never seen"


class BrokenRepr:
    def __repr__(self) -> str:
        raise RuntimeError("repr exploded")


def frame() -> pd.DataFrame:
    return pd.DataFrame({"city": ["Oslo", "Lima", None], "temp": [3.5, 19.0, 11.25], "year": [2024, 2024, 2025]})


def registry(namespace: dict[str, Any], **kernel: Any) -> ToolRegistry:
    return ToolRegistry(kernel_tools(NamespaceKernel(namespace, **kernel), limits=Limits(seconds=0.5)))


def test_inspect_describes_a_dataframe_by_its_columns_dtypes_head_and_statistics() -> None:
    text = registry({"df": frame()}).call_sync("notebook.inspect", {"name": "df"})
    assert "`df` is a pandas DataFrame: 3 rows × 3 columns" in text
    assert "- city: " in text and "1 null" in text
    assert "- temp: float64" in text and "- year: int64" in text
    assert "head(5):" in text and "Oslo" in text
    assert "describe() of the numeric columns:" in text and "mean" in text


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (np.arange(12.0).reshape(3, 4), ["shape (3, 4), dtype float64", "min 0, max 11, mean 5.5"]),
        ({"train": [1, 2], "test": [3]}, ["dict of 2 items", "'train': [1, 2]"]),
        (list(range(100)), ["list of 100 items (int …)", "… and 92 more"]),
        ("x" * 5000, ["str of 5,000 characters (the start)"]),
        (b"\x00\x01" * 10, ["bytes of 20 bytes"]),
        (describe_value, ["function describe_value(value", "Docstring:"]),
        (json, ["the module json, from"]),
    ],
)
def test_inspect_describes_each_kind_of_value_for_what_it_is(value: Any, words: list[str]) -> None:
    text = describe_value(value, "v")
    for word in words:
        assert word in text, text


def test_dotted_names_and_literal_keys_resolve_without_evaluating_anything(tmp_path: Path) -> None:
    data = {"train": frame(), "sizes": [10, 20, 30]}
    tools = registry({"data": data, "df": frame()})
    assert "Index(['city', 'temp', 'year']" in tools.call_sync("notebook.inspect", {"name": "df.columns"})
    assert "pandas Series named 'temp'" in tools.call_sync("notebook.inspect", {"name": "data['train']['temp']"})
    assert resolve("data['sizes'][-1]", {"data": data}) == 30
    assert resolve("data['sizes'][0:2]", {"data": data}) == [10, 20]
    marker = tmp_path / "ran"
    for hostile in (
        f"__import__('pathlib').Path({str(marker)!r}).touch()",
        f"open({str(marker)!r}, 'w')",
        "df.__class__.__subclasses__",
        "data[print('hi')]",
        "df; import os",
    ):
        with pytest.raises(ToolCallError) as refused:
            tools.call_sync("notebook.inspect", {"name": hostile})
        assert refused.value.kind == "tool", hostile
    assert not marker.exists()
    with pytest.raises(ToolError, match=r"'dff' is not defined in the notebook; did you mean df\?"):
        resolve("dff", {"df": 1})


def test_a_repr_that_sleeps_or_raises_becomes_part_of_the_description() -> None:
    tools = registry({"slow": SlowRepr(), "broken": BrokenRepr(), "both": [BrokenRepr(), SlowRepr()]})
    slow = tools.call_sync("notebook.inspect", {"name": "slow"})  # the repr sleeps 30 s; the limit answers first
    assert "whose repr failed: did not finish within 0.5 s" in slow
    assert "whose repr failed: RuntimeError: repr exploded" in tools.call_sync("notebook.inspect", {"name": "broken"})
    mixed = tools.call_sync("notebook.inspect", {"name": "both"})
    assert "RuntimeError: repr exploded" in mixed and "did not finish" in mixed


def test_vars_lists_the_users_values_and_leaves_out_modules_private_and_hidden_names() -> None:
    namespace = {"df": frame(), "arr": np.zeros((2, 5)), "np": np, "_hidden": 1, "__builtins__": {}, "name": "Ada"}
    text = registry(namespace).call_sync("notebook.vars")
    assert text.splitlines()[0] == "3 variables:"
    assert "- arr: numpy.ndarray 2×5, ≈80 B" in text
    assert "- df: pandas.DataFrame 3×3" in text and "- name: str len 3" in text
    assert "np" not in text.replace("numpy", "") and "_hidden" not in text


def test_a_turn_over_a_sleeping_repr_finishes(
    tape: Tape, model: OpenAIModel, openai_server: OpenAICompatibleServer
) -> None:
    openai_server.reply_tool_calls([{"name": "notebook_inspect", "arguments": {"name": "slow"}}])
    openai_server.reply("It would not show itself.")
    kernel = NamespaceKernel({"slow": SlowRepr()})
    agent = Agent(tape, model, tools=kernel_tools(kernel, limits=Limits(seconds=0.5)))
    turn = agent.run("describe `slow`")  # the repr sleeps 30 s: the tool's own limit, not the repr, ends the wait
    assert turn.status == "ok"
    assert "did not finish within 0.5 s" in openai_server.last_request["messages"][-1]["content"]


def test_code_the_user_denies_never_runs_and_the_denial_is_what_the_model_reads(
    tape: Tape, model: OpenAIModel, openai_server: OpenAICompatibleServer, tmp_path: Path
) -> None:
    marker = tmp_path / "side-effect"
    asked: list[str] = []

    async def deny(code: str) -> Decision:
        asked.append(code)
        return Decision("denied", "The user denied running this code. Nothing ran.")

    namespace: dict[str, Any] = {"x": 1}
    code = f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\nx = 2"
    openai_server.reply_tool_calls([{"name": "python_run", "arguments": {"code": code}}])
    openai_server.reply("Understood, I will not run it.")
    turn = Agent(tape, model, tools=kernel_tools(NamespaceKernel(namespace, consent_to=deny))).run("write the file")

    assert asked == [code] and not marker.exists() and namespace == {"x": 1}
    sent = openai_server.last_request["messages"][-1]
    assert sent["role"] == "tool"
    denial = {"kind": "denied", "message": "The user denied running this code. Nothing ran."}
    assert json.loads(sent["content"]) == denial
    errors = [entry.payload for entry in turn.entries if entry.kind == "error"]
    assert [error["kind"] for error in errors] == ["tool.denied"]
    assert not any(entry.kind == "event" and entry.name == "notebook.cell" for entry in tape.read())


def test_approved_code_runs_in_the_namespace_and_is_recorded_as_a_cell(
    tape: Tape, model: OpenAIModel, openai_server: OpenAICompatibleServer
) -> None:
    namespace: dict[str, Any] = {"df": frame()}
    code = (
        "import sys\nprint('rows', len(df))\nprint('careful', file=sys.stderr)\n"
        "df['temp_f'] = df.temp * 9 / 5 + 32\ndf.temp_f.max()"
    )
    openai_server.reply_tool_calls([{"name": "python_run", "arguments": {"code": code}}])
    openai_server.reply_tool_calls([{"name": "python_run", "arguments": {"code": "1 / 0"}}])
    openai_server.reply("Done.")
    turn = Agent(tape, model, tools=kernel_tools(NamespaceKernel(namespace))).run("add a Fahrenheit column")

    assert list(namespace["df"].columns) == ["city", "temp", "year", "temp_f"]
    first, second = (entry.payload["results"][0] for entry in turn.entries if entry.kind == "tool_result")
    assert "stdout:\nrows 3" in first and "stderr:\ncareful" in first and "result: np.float64(66.2)" in first
    assert "The code failed" in second and "ZeroDivisionError: division by zero" in second
    assert 'File "<python.run' in second and "1 / 0" in second
    cells = [entry for entry in turn.entries if entry.kind == "event" and entry.name == "notebook.cell"]
    assert [cell.payload["data"]["source"] for cell in cells] == [code, "1 / 0"]
    assert cells[1].payload["data"]["error"] == "ZeroDivisionError: division by zero"
    assert {cell.meta["run_id"] for cell in cells} == {turn.run_id}


def test_every_tool_result_is_redacted_and_cut_to_its_budget_saying_so(
    tape: Tape, model: OpenAIModel, openai_server: OpenAICompatibleServer
) -> None:
    secret = "sk-" + "a1B2c3D4e5F6g7H8i9J0" * 2
    namespace = {"config": {"api_key": secret}, "notes": "\n".join(f"line {n} " + "word " * 20 for n in range(400))}
    openai_server.reply_tool_calls(
        [
            {"name": "notebook_inspect", "arguments": {"name": "config"}},
            {"name": "notebook_inspect", "arguments": {"name": "notes"}},
        ]
    )
    openai_server.reply("Seen.")
    agent = Agent(tape, model, tools=kernel_tools(NamespaceKernel(namespace)), result_budget=300)
    turn = agent.run("look")
    config, notes = next(entry for entry in turn.entries if entry.kind == "tool_result").payload["results"]
    assert secret not in json.dumps(openai_server.requests) and "[redacted]" in config
    assert notes.splitlines()[-1].startswith("[cut: this result was ≈") and "over the budget of 300" in notes
    assert len(notes) < 2000


def test_the_offline_model_inspects_a_backticked_variable_and_describes_what_came_back(tape: Tape) -> None:
    agent = Agent(tape, "offline", tools=kernel_tools(NamespaceKernel({"df": frame()})))
    turn = agent.run("describe `df`")
    call = next(entry for entry in turn.entries if entry.kind == "tool_call").payload["calls"][0]["function"]
    assert (call["name"], json.loads(call["arguments"])) == ("notebook_inspect", {"name": "df"})
    assert "I looked it up with `notebook.inspect`" in turn.text and "- temp: float64" in turn.text


def test_the_offline_model_runs_code_it_is_asked_to_run(tape: Tape) -> None:
    namespace: dict[str, Any] = {}
    agent = Agent(tape, "offline", tools=kernel_tools(NamespaceKernel(namespace)))
    turn = agent.run("run: total = sum(range(5))\ntotal")
    assert namespace["total"] == 10 and "result: 10" in turn.text


def test_a_sleeping_repr_leaves_only_a_daemon_thread_behind() -> None:
    before = {thread.ident for thread in threading.enumerate()}
    describe_value(SlowRepr(), "slow", Limits(seconds=0.2))
    left = [thread for thread in threading.enumerate() if thread.ident not in before]
    assert all(thread.daemon for thread in left)
