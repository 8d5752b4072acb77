"""The window gauge on the timeline: used / limit, a limit line on the per-turn bars, a refused request in red."""

from __future__ import annotations

import re
import time
from pathlib import Path

from bub_nb.agent import Agent
from bub_nb.agent.models import OfflineModel
from bub_nb.context import view_of_turn
from bub_nb.notebook.widgets import ContextView, TapeTimeline
from bub_nb.notebook.widgets._style import ERROR_COLOR
from bub_nb.tape import Tape, open_tape

FACT = "Fact {n}: the team decided on option {n} because the budget allows it and the deadline is near. "


def turn_rows(html: str) -> list[dict[str, object]]:
    """Each turn row of a timeline: its entry id, its words, and whether its bar is drawn in the palette's red."""
    rows = []
    for match in re.finditer(r'<tr class="bub-turn[^"]*" data-entry-id="(\d+)".*?</tr>', html, re.DOTALL):
        row = match.group(0)
        bars = re.search(r'<td class="bub-bars">(.*?)</td>', row, re.DOTALL)
        red = bars is not None and ERROR_COLOR in bars.group(1) and "bub-over" in bars.group(1)
        rows.append({"data-entry-id": match.group(1), "text": re.sub(r"<[^>]+>", "", row), "red": red})
    return rows


def overflowing(tape: Tape, window: int = 800) -> Agent:
    """Six long facts against a small window: the request grows until the model refuses one and a handoff follows."""
    agent = Agent(tape, OfflineModel(context_window=window))
    for n in range(1, 7):
        agent.run(FACT.format(n=n) * 2)
    return agent


def test_the_timeline_draws_the_window_on_every_turn_bar_and_the_refused_request_in_red(tape: Tape) -> None:
    overflowing(tape)
    timeline = TapeTimeline(tape, model=OfflineModel(context_window=800))
    activity = timeline.activity
    assert activity.refusals, "the scenario overflows at least once"
    refused = activity.refusals[0]
    assert refused.prompt_tokens is not None and refused.prompt_tokens > 800 and refused.window == 800
    html = timeline.to_html()
    rows = re.findall(r'<tr class="(bub-turn[^"]*)" data-entry-id="(\d+)"', html)
    assert ("bub-turn bub-refused", str(refused.entry_id)) in rows
    assert len(rows) == len(activity.turns) + len(activity.refusals)
    assert html.count('class="bub-limit"') == len(rows), "every bar carries the limit line"
    assert f"refused: {refused.prompt_tokens} &gt; 800 tokens" in html
    used, limit = timeline.gauge  # type: ignore[misc]
    # The last request, rebuilt: a run's usage adds up every call of the turn, an overflow's summary included.
    assert limit == 800 and used == view_of_turn(tape, -1).total_tokens <= 800
    assert f'data-used="{used}" data-limit="800"' in html
    text = timeline.to_text()
    assert f"{used} / 800 tokens" in text and "| window 800" in text and "X" in text


def test_without_a_model_the_limit_is_the_window_the_refusal_named(tape: Tape) -> None:
    overflowing(tape)
    timeline = TapeTimeline(tape)
    assert timeline.limit == 800 and "bub-limit" in timeline.to_html()


def test_a_timeline_without_a_window_draws_no_limit(tape: Tape) -> None:
    Agent(tape, OfflineModel()).run("Hello")
    timeline = TapeTimeline(tape)
    assert timeline.limit is None and 'class="bub-limit"' not in timeline.to_html()
    assert timeline.gauge is not None and "window unknown" in timeline.to_text()


def test_follow_refreshes_the_gauge_as_the_tape_grows(tape: Tape) -> None:
    agent = Agent(tape, OfflineModel(context_window=4000))
    agent.run("Hello")
    timeline = TapeTimeline(tape, model=agent.model)
    first = timeline.gauge
    agent.run(FACT.format(n=1) * 4)
    timeline.refresh()
    assert timeline.gauge is not None and first is not None and timeline.gauge[0] > first[0]


def test_followed_gauges_fill_up_as_another_writer_adds_turns(tmp_path: Path) -> None:
    tape = open_tape("lesson", home=tmp_path)
    small = OfflineModel(context_window=2000)
    Agent(tape, small).run("Hello")
    view, timeline = ContextView(tape, model=small, follow=True), TapeTimeline(tape, model=small, follow=True)
    try:
        assert view.gauge is not None and timeline.gauge is not None
        before = (view.gauge[0], timeline.gauge[0])
        Agent(open_tape("lesson", home=tmp_path), small).run(FACT.format(n=1) * 3)  # another writer, the same file
        deadline = time.monotonic() + 60  # bounds a hang only; each follower wakes on its own, so wait for both
        while time.monotonic() < deadline and (view.gauge[0] == before[0] or timeline.gauge[0] == before[1]):
            time.sleep(0.1)
        assert view.gauge[0] > before[0] and timeline.gauge[0] > before[1]
        assert f"{view.gauge[0]} / 2000 tokens" in view.to_text()
    finally:
        view.unfollow()
        timeline.unfollow()


def test_a_turn_whose_usage_adds_up_several_calls_says_how_many(tape: Tape) -> None:
    overflowing(tape)
    timeline = TapeTimeline(tape, model=OfflineModel(context_window=800))
    after = next(t for t in timeline.activity.turns if t.entry_id > timeline.activity.refusals[0].entry_id)
    summary = next(e for e in tape.read(kinds=("event",)) if e.name == "summary")
    assert after.calls == 1 + len(summary.payload["data"]["requests"]) > 1  # the retry, and the summary's requests
    assert all(t.calls == 1 for t in timeline.activity.turns if t.entry_id < summary.id)
    assert f"[{after.calls} calls]" in timeline.to_text()
    row = next(r for r in turn_rows(timeline.to_html()) if r["data-entry-id"] == str(after.entry_id))
    if (after.prompt_tokens or 0) > 800:  # red past the line whatever the number of calls, and said in words
        assert f"over the window: {after.calls} calls added up" in row["text"] and row["red"]
    else:
        assert f"· {after.calls} calls added up" in row["text"] and not row["red"]
