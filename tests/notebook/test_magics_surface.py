"""What a user types, on a real InteractiveShell: comma cells, the %bub line form, plain-text outputs, -o.

The same paths run in a real kernel in test_kernel_surface.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from harness.shell import Notebook
from IPython.core.error import UsageError

from bub_nb.notebook.parsing.transformers import comma_cell


def user_messages(nb: Notebook) -> list[str]:
    return [e.payload["content"] for e in nb.tape.read() if e.kind == "message" and e.payload["role"] == "user"]


def test_a_comma_cell_is_a_command_on_the_current_tape(nb: Notebook, capsys: pytest.CaptureFixture[str]) -> None:
    nb.run("%tape record on")  # the command logs itself; the recorder must not log the cell again
    nb.run("\n  ,handoff name=phase/setup summary=loaded")
    first, anchor = nb.tape.anchors()[0], nb.tape.find_anchor("phase/setup")
    assert first.name == "session/start" and anchor.state == {"summary": "loaded"}
    nb.run(",help")
    assert ",handoff" in capsys.readouterr().out
    events = [e.payload for e in nb.tape.read() if e.kind == "event"]
    assert [e["data"]["name"] for e in events if e["name"] == "command"] == ["tape.handoff", "help"]
    assert not [e for e in events if e["name"] == "notebook.cell"]


def test_only_cells_starting_with_a_comma_are_rewritten() -> None:
    assert comma_cell(["x = (1,\n", "2)\n"]) == ["x = (1,\n", "2)\n"]
    assert comma_cell(["# ,note\n"]) == ["# ,note\n"]
    assert comma_cell(["\n", ",tape.info\n"]) == ["%%bub\n", "\n", ",tape.info\n"]


def test_unload_ext_removes_comma_cells_magics_and_the_recorder(nb: Notebook) -> None:
    magics = nb.magics
    nb.run("%tape record on")
    nb.run("%unload_ext bub_nb")
    assert comma_cell not in nb.shell.input_transformers_cleanup
    assert not {"bub", "handoff", "anchors", "context", "memory", "tape"} & set(nb.shell.magics_manager.magics["line"])
    assert "bub" not in nb.shell.magics_manager.magics["cell"]
    assert not magics.recorder.active
    before = len(magics.session.tape.read())
    nb.run("after_unload = 1")
    assert len(magics.session.tape.read()) == before  # the recorder is gone too
    nb.run("%load_ext bub_nb")  # and it comes back whole
    nb.run(",tape.info")
    assert comma_cell in nb.shell.input_transformers_cleanup


def test_the_line_form_sends_dollars_and_braces_as_typed(nb: Notebook) -> None:
    nb.run("x = 'EXPANDED'")
    nb.run("%bub I paid $5 for it, not $x")
    nb.run('%bub json {"a": 1}')
    nb.run("%bub -o said --no-stream I'm {x}")
    assert user_messages(nb) == ["I paid $5 for it, not $x", 'json {"a": 1}', "I'm EXPANDED"]
    assert "offline teaching model" in nb.shell.user_ns["said"]


def text_plain_of_each_output(nb: Notebook) -> list[tuple[str, str]]:
    return [(o["data"].get("text/html", ""), o["data"]["text/plain"]) for o in nb.displays.outputs]


def test_every_confirmation_has_its_text_as_text_plain(nb: Notebook, tmp_path: Any) -> None:
    nb.run("%handoff phase/a summary=done")
    nb.run("%memory save Prefers tea")
    nb.run(f"%tape export md {tmp_path / 'out.md'}")
    nb.run("%tape record off")
    shown = text_plain_of_each_output(nb)
    assert len(shown) == 4
    for html, plain in shown:
        assert html and plain and "IPython.core.display" not in plain
        assert "text/markdown" not in str([o["data"].keys() for o in nb.displays.outputs])
    assert "Handoff **phase/a**" in shown[0][1]


def test_a_failed_turn_clears_the_output_variable(nb: Notebook, openai_server: Any, monkeypatch: Any) -> None:
    monkeypatch.setenv("BUB_API_BASE", openai_server.base_url)
    monkeypatch.setenv("BUB_API_KEY", "test-key-not-secret")
    nb.run("%%bub -o answer\nfirst")
    assert "answer" in nb.shell.user_ns
    openai_server.fail(400, "bad request")
    with pytest.raises(UsageError):
        nb.run("%%bub -m openai:test-model -o answer\nsecond")
    assert "answer" not in nb.shell.user_ns


def test_an_interrupt_before_any_text_says_nothing_arrived(nb: Notebook, monkeypatch: Any, capsys: Any) -> None:
    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(nb.magics.session, "run_turn", interrupted)
    with pytest.raises(KeyboardInterrupt):
        nb.run("%%bub\nhello")
    out = capsys.readouterr().out
    assert "Interrupted before any answer arrived" in out and "partial answer is kept" not in out


def test_the_footer_says_what_the_estimate_leaves_out(nb: Notebook, capsys: Any) -> None:
    nb.run("%%bub\nhello")
    footer = capsys.readouterr().out.strip().splitlines()[-1]
    assert "tokens, without system prompt and tools" in footer


def test_a_turn_stopped_at_max_steps_leaves_no_answer_in_the_output_variable(nb: Notebook) -> None:
    nb.run("answer = 'an earlier answer'")
    nb.run(
        "from bub_nb.agent.models import ScriptedModel\n"
        "looping = ScriptedModel([{'tool_calls': [{'name': 'tape.info', 'arguments': {}}]}])"
    )
    nb.run("%config BubMagics.max_steps = 1")
    nb.run("%%bub -m looping -o answer\nkeep calling tools")
    assert nb.magics.session.last_turn.status == "max_steps"
    assert "answer" not in nb.shell.user_ns
