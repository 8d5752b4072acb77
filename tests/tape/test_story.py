"""A notebook's agents read together: the story in order across their tapes, the ``agent`` column of frames."""

from __future__ import annotations

from pathlib import Path

import pytest

import bub_nb
from bub_nb import Agent, open_tape
from bub_nb.agent.team import Team
from bub_nb.tape.open import notebook_tapes
from bub_nb.tape.reports.story import story, story_markdown


@pytest.fixture
def handed_back(tmp_path: Path) -> Team:
    notebook = open_tape("nb", home=tmp_path)
    analyst, reviewer = Agent(notebook, "offline", name="analyst"), Agent(notebook, "offline", name="reviewer")
    team = Team(notebook, [analyst, reviewer])
    analyst.run("What is the mean of 1, 2 and 3?")
    team.handoff("review/1", sender="analyst", to="reviewer", reason="a second opinion", summary="asked [#6]")
    reviewer.run("Is the mean right?")
    team.handoff("review/done", to="analyst", summary="it is right")
    analyst.run("Thanks")
    open_tape("elsewhere", home=tmp_path).append_message({"role": "user", "content": "another notebook"})
    return team


def test_the_story_runs_in_order_across_the_agents_tapes(handed_back: Team) -> None:
    tapes = notebook_tapes(handed_back.tape)
    assert list(tapes) == ["main", "analyst", "reviewer"]
    beats = [(beat.agent, beat.kind) for beat in story(tapes)]
    assert beats == [
        ("analyst", "prompt"),
        ("analyst", "answer"),
        ("analyst", "handoff"),
        ("reviewer", "prompt"),
        ("reviewer", "answer"),
        ("reviewer", "handoff"),
        ("analyst", "prompt"),
        ("analyst", "answer"),
    ]
    text = story_markdown(tapes)
    assert "3. 🤝 **analyst → reviewer** (transfer) ⚓ review/1 `#9`: a second opinion · asked [#6]" in text
    assert "Who held the conversation: **reviewer** from step 3; **analyst** from step 6." in text


def test_read_tapes_names_each_rows_agent(handed_back: Team, tmp_path: Path) -> None:
    frame = bub_nb.read_tapes(tmp_path)
    agents = dict(zip(frame["tape_name"], frame["agent"], strict=True))
    assert agents["nb~analyst"] == "analyst" and agents["nb~reviewer"] == "reviewer"
    assert agents["elsewhere"] is None or pd_isna(agents["elsewhere"])
    assert bub_nb.read_tapes(tmp_path, columns=["tape_name", "agent"]).columns.tolist() == ["tape_name", "agent"]


def pd_isna(value: object) -> bool:
    import pandas as pd

    return bool(pd.isna(value))


def test_a_lean_read_names_the_same_agents_as_the_whole_read(handed_back: Team, tmp_path: Path) -> None:
    open_tape("nb", home=tmp_path).append_error("note", "only the notebook's own tape holds an error")
    whole = bub_nb.read_tapes(tmp_path)
    lean = bub_nb.read_tapes(tmp_path, kinds=["error"])
    assert lean["agent"].tolist() == whole[whole["kind"] == "error"]["agent"].tolist() == ["main"]
    arrow = bub_nb.read_tapes(tmp_path, kinds=["error"], as_="arrow")
    assert arrow.column("agent").to_pylist() == ["main"]
