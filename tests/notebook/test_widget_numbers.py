"""Every widget built on the lesson's tape shows the same figure for the same thing: the request gauge and its
table, the view and the diff, the timeline and the run events the endpoint reported."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bub_nb import open_tape
from bub_nb.agent import Agent
from bub_nb.agent.models import OfflineModel
from bub_nb.context import build_view, view_of_turn
from bub_nb.notebook.widgets import ContextDiffView, ContextView, NextRequestView, TapeTimeline
from bub_nb.tape import Tape
from bub_nb.tape.events import run_data

LESSON = Path(__file__).resolve().parents[2] / "examples" / "lesson-context.ipynb"


def prompts() -> list[str]:
    """The lesson's prompts to the window of 800 tokens, in order, from its ``%%bub -m echo`` cells."""
    cells = json.loads(LESSON.read_text(encoding="utf-8"))["cells"]
    sources = ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "code"]
    return [source.split("\n", 1)[1] for source in sources if source.startswith("%%bub -m echo\n")]


@pytest.fixture
def lesson(tmp_path: Path) -> tuple[Tape, Agent]:
    tape = open_tape("lesson-context", home=tmp_path)
    agent = Agent(tape, OfflineModel(context_window=800, echo=True))
    for number, prompt in enumerate(prompts()):
        if number == 3:  # the lesson hands off after fact 3
            summary = "Class trip for 24 in June, budget 3,000 euros; we chose the train (fact 3)"
            tape.handoff("trip/decided", {"summary": summary, "next_steps": "Plan the museum visit"})
        agent.run(prompt)
    return tape, agent


def attr(markup: str, name: str) -> list[int]:
    return [int(value) for value in re.findall(rf'{name}="(\d+)"', markup)]


def test_the_request_gauge_and_its_table_and_the_view_agree(lesson: tuple[Tape, Agent]) -> None:
    tape, agent = lesson
    request = NextRequestView(agent).request
    html = NextRequestView(agent).to_html()
    [used] = attr(html, "data-used")
    assert used == request.window_tokens == attr(html, "data-window-tokens")[0]  # the gauge is the first total
    parts = dict(zip(re.findall(r'data-part="([^"]+)" data-tokens', html), attr(html, "data-tokens"), strict=True))
    assert sum(parts.values()) == request.total_tokens == attr(html, "data-total-tokens")[0]
    assert used == request.total_tokens - parts["tool schemas"]  # the one part the offline model does not count
    assert "The next request to <code>offline:echo</code>" in html  # titled with the model actually used
    # The view part of the request is the view %context shows, less the prompt it adds.
    view = build_view(tape)
    shown = ContextView(tape).to_html()
    assert f'data-total-tokens="{view.total_tokens}"' in shown


def test_the_timeline_the_run_events_and_the_turns_views_agree(lesson: tuple[Tape, Agent]) -> None:
    tape, _agent = lesson
    timeline = TapeTimeline(tape, model=OfflineModel(context_window=800, echo=True))
    html = timeline.to_html()
    reported = [data["usage"]["prompt_tokens"] for e in tape.read(kinds=("event",)) if (data := run_data(e))
                and isinstance(data.get("usage"), dict) and data.get("status") == "ok"]  # fmt: skip
    rows = re.findall(r'<tr class="bub-turn( bub-refused)?" data-entry-id="\d+" data-prompt-tokens="(\d+)"', html)
    assert [int(tokens) for refused, tokens in rows if not refused] == reported
    used, limit = timeline.gauge  # type: ignore[misc]
    assert (used, limit) == (view_of_turn(tape, -1).total_tokens, 800)
    # Each turn past the line is red whatever its number of calls, and says so in words.
    over = [int(tokens) for refused, tokens in rows if not refused and int(tokens) > 800]
    assert over and html.count("over the window:") == len(over)


def test_the_diff_counts_both_views_alike_and_as_the_view_does(lesson: tuple[Tape, Agent]) -> None:
    tape, _agent = lesson
    diff = ContextDiffView(tape, "full", "last")
    assert sum(diff.diff.tokens_b.values()) == build_view(tape).total_tokens
    assert sum(diff.diff.tokens_a.values()) == build_view(tape, None).total_tokens
    assert diff.diff.tokens_a["system prompt"] == diff.diff.tokens_b["system prompt"] == 0
    assert "neither with the system prompt" in diff.to_text() and "neither with the system prompt" in diff.to_html()
