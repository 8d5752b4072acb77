"""The kernel tools as ``%%bub`` offers them in a real IPython shell: which tools a turn gets, how
``python.run`` is refused where no one can approve it, and what ``allow_code = "always"`` changes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from harness.shell import Notebook

from bub_nb.testing import OpenAICompatibleServer

LOOKING = ["notebook_vars", "notebook_inspect", "notebook_cells"]


def offered(server: OpenAICompatibleServer) -> list[str]:
    return [tool["function"]["name"] for tool in server.last_request.get("tools") or ()]


def test_looking_is_offered_by_default_and_running_code_only_when_asked_for(nb: Notebook, endpoint: Any) -> None:
    for _ in range(5):
        endpoint.reply("ok")
    nb.run("%%bub\nhi")
    assert set(LOOKING) <= set(offered(endpoint)) and "python_run" not in offered(endpoint)
    nb.run("%%bub --tools *\nhi")
    assert set(LOOKING) <= set(offered(endpoint)) and "python_run" not in offered(endpoint)
    nb.run("%%bub --tools notebook.inspect,python.run\nhi")
    assert offered(endpoint) == ["notebook_inspect", "python_run"]
    nb.run("%config BubMagics.allow_code = True")
    nb.run("%%bub\nhi")
    assert "python_run" in offered(endpoint)
    nb.run("%%bub --tools none\nhi")
    assert offered(endpoint) == []


def test_python_run_without_a_frontend_is_refused_and_nothing_runs(nb: Notebook, endpoint: Any, tmp_path: Path) -> None:
    marker = tmp_path / "side-effect.txt"
    code = f"open({str(marker)!r}, 'w').write('ran')\nchanged = True"
    endpoint.reply_tool_calls([{"name": "python_run", "arguments": {"code": code}}])
    endpoint.reply("I could not run it.")
    nb.run("%%bub --tools python.run\nwrite the file")

    assert not marker.exists() and "changed" not in nb.shell.user_ns
    refusal = json.loads(endpoint.last_request["messages"][-1]["content"])
    assert refusal["kind"] == "refused" and "no one can approve the code. Nothing ran." in refusal["message"]
    result = [entry for entry in nb.tape.read() if entry.kind == "tool_result"][-1]
    assert result.payload["results"] == [refusal]


def test_always_runs_code_without_asking_and_records_it_as_a_cell(
    nb: Notebook, endpoint: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    nb.run("numbers = [3, 1, 2]")
    nb.run('%config BubMagics.allow_code = "always"')
    code = "numbers.sort()\nprint('sorted', numbers)"
    endpoint.reply_tool_calls([{"name": "python_run", "arguments": {"code": code}}])
    endpoint.reply("Sorted.")
    nb.run("%%bub\nsort them")

    assert nb.shell.user_ns["numbers"] == [1, 2, 3]
    assert "sorted [1, 2, 3]" in capsys.readouterr().out  # shown in the cell as it ran
    assert "stdout:\nsorted [1, 2, 3]" in endpoint.last_request["messages"][-1]["content"]
    cell = next(entry for entry in nb.tape.read() if entry.kind == "event" and entry.name == "notebook.cell")
    assert cell.payload["data"]["source"].startswith("numbers.sort()") and cell.payload["data"]["by"] == "python.run"
    endpoint.reply("The list is sorted now.")
    nb.run("%%bub --context notebook --tools none\nwhat changed?")
    seen = [m["content"] for m in endpoint.last_request["messages"] if m["role"] == "user"]
    assert any(text.startswith("[Notebook cell") and "numbers.sort()" in text for text in seen), seen


def test_cells_shows_the_last_cells_with_results_and_errors_but_not_bub_cells(nb: Notebook, endpoint: Any) -> None:
    nb.run("a = 40")
    nb.run("a + 2")
    with pytest.raises(ZeroDivisionError):
        nb.run("a / 0")
    endpoint.reply("first")
    nb.run("%%bub --tools none\nhello")
    endpoint.reply_tool_calls([{"name": "notebook_cells", "arguments": {"n": 3}}])
    endpoint.reply("I see them.")
    nb.run("%%bub\nwhat did I run?")
    shown = endpoint.last_request["messages"][-1]["content"]
    assert shown.startswith("In [")
    assert "a = 40" in shown and "Out[" in shown and "42" in shown
    assert "It failed with ZeroDivisionError: division by zero" in shown
    assert "%%bub" not in shown


def test_tool_budget_is_a_setting_and_cuts_every_result(nb: Notebook, endpoint: Any) -> None:
    nb.run("%config BubMagics.tool_budget = 10")  # %config logs the refusal and keeps the value
    assert nb.magics.tool_budget == 2000
    nb.run("%config BubMagics.tool_budget = 80")
    nb.run("text = 'word ' * 5000")
    endpoint.reply_tool_calls([{"name": "notebook_inspect", "arguments": {"name": "text"}}])
    endpoint.reply("long")
    nb.run("%%bub\nread `text`")
    result = endpoint.last_request["messages"][-1]["content"]
    assert "[cut: this result was ≈" in result and "budget of 80" in result
