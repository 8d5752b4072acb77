"""Who holds the conversation is state on the tapes: kept incrementally, equal to a fold from scratch, shared by
every team over the same tapes, and changed under the notebook's lock."""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bub_nb.agent.team import Team, handed_away, holder, holder_on_tapes, passings
from bub_nb.errors import AgentError, AnchorNameError, NotHoldingError
from bub_nb.tape import FileTapeStore, MemoryTapeStore, Tape
from bub_nb.tape.frames.tapes import read_tapes
from bub_nb.tape.open import notebook_tapes

AGENTS = ("main", "analyst", "reviewer", "critic")
# A step: (which of two teams over the same folder acts, sender, receiver, share?) or a reset of an agent's tape.
steps = st.lists(
    st.one_of(
        st.tuples(st.integers(0, 1), st.sampled_from(AGENTS), st.sampled_from(AGENTS), st.booleans()),
        st.tuples(st.just("reset"), st.sampled_from(AGENTS[1:])),
    ),
    max_size=14,
)


@settings(max_examples=25, deadline=None)
@given(steps=steps)
def test_the_holder_kept_by_each_team_equals_a_fold_over_the_tapes(
    tmp_path_factory: pytest.TempPathFactory, steps: list
) -> None:  # type: ignore[type-arg]
    folder = tmp_path_factory.mktemp("tapes")
    # Two teams, each on its own store object over the same folder: two kernels of one notebook.
    teams = [Team(Tape("nb", FileTapeStore(folder)), AGENTS[1:]) for _ in range(2)]
    for number, step in enumerate(steps):
        if step[0] == "reset":
            teams[0].tape_of(step[1]).reset(archive=True)
        else:
            acting, sender, receiver, share = step
            team = teams[acting]
            team.tape_of(sender).append_message({"role": "user", "content": f"step {number}"})
            with contextlib.suppress(AgentError, NotHoldingError):  # refused steps write nothing
                team.handoff(f"h{number}", sender=sender, to=receiver, share=share)
        fold = passings(notebook_tapes(teams[0].tape))
        for team in teams:
            assert team.holder() == holder(fold) == holder_on_tapes(team.tape)
            assert team.ownership().handed_away == handed_away(fold)


def test_a_fresh_team_over_the_tapes_finds_the_agents_and_the_holder(tmp_path: Path) -> None:
    first = Team(Tape("nb", FileTapeStore(tmp_path)))
    first.define("rev", {"model": "offline", "instructions": None, "tools": None, "context": None})
    first.define("other", {"model": None, "instructions": None, "tools": None, "context": None})
    first.handoff("h1", to="rev")
    again = Team(Tape("nb", FileTapeStore(tmp_path)))  # a restart: nothing but the tapes
    assert again.names == ["main", "rev", "other"] and again.holder() == "rev"
    assert again.recorded("rev") == {"model": "offline", "instructions": None, "tools": None, "context": None}
    with pytest.raises(NotHoldingError, match="'main' handed the conversation to 'rev'"):
        again.check_may_run("main")
    again.handoff("h2", to="other")
    assert first.holder() == "other"  # the first team sees what the second wrote


def test_an_agent_a_handoff_names_becomes_a_member_of_every_team(tmp_path: Path) -> None:
    first = Team(Tape("nb", FileTapeStore(tmp_path)), ["rev"])
    other = Team(Tape("nb", FileTapeStore(tmp_path)), ["rev"])
    other.add("third")
    other.handoff("h1", to="rev")
    other.handoff("h2", to="third")
    assert first.holder() == "third" and "third" in first.names


def test_a_handoff_checks_the_holder_again_under_the_notebooks_lock() -> None:
    store = MemoryTapeStore()
    mine, theirs = Team(Tape("nb", store), ["rev", "other"]), Team(Tape("nb", store), ["rev", "other"])
    mine.tape_of("main").append_message({"role": "user", "content": "hi"})
    entered, go = threading.Event(), threading.Event()
    outcome: list[BaseException | None] = []

    def hand_on() -> None:
        with theirs.locked():  # held by the other kernel while it checks and writes
            entered.set()
            go.wait()
            theirs.handoff("theirs", to="other")

    other_kernel = threading.Thread(target=hand_on)
    other_kernel.start()
    entered.wait()
    assert mine.holder() is None  # what this kernel read before the other one wrote

    def mine_now() -> None:
        try:
            mine.handoff("mine", to="rev")
            outcome.append(None)
        except BaseException as error:  # the refusal is the outcome under test
            outcome.append(error)

    waiting = threading.Thread(target=mine_now)
    waiting.start()
    go.set()
    other_kernel.join()
    waiting.join()
    assert isinstance(outcome[0], NotHoldingError) and "'other' holds it now" in str(outcome[0])
    assert mine.holder() == theirs.holder() == "other"
    assert [e.payload["name"] for e in mine.tape_of("main").read() if e.kind == "anchor"] == ["theirs"]


@pytest.mark.parametrize("name", ["two\nlines", "nul\x00", "x" * 10_000, "tab\tbed"])
def test_a_handoff_between_agents_refuses_an_anchor_name_that_is_not_one_line(name: str) -> None:
    team = Team(Tape("nb", MemoryTapeStore()), ["rev"])
    team.tape_of("main").append_message({"role": "user", "content": "hi"})
    before = {agent: len(tape) for agent, tape in team.tapes().items()}
    with pytest.raises(AnchorNameError, match="Anchor name"):
        team.handoff(name, to="rev")
    assert {agent: len(tape) for agent, tape in team.tapes().items()} == before


def test_a_tape_only_named_like_an_agents_is_no_agents(tmp_path: Path) -> None:
    store = FileTapeStore(tmp_path / "tapes")
    Tape("notes~draft", store).append_message({"role": "user", "content": "my own notes"})
    team = Team(Tape("nb", store))
    team.define("rev", {"model": None, "instructions": None, "tools": None, "context": None})
    team.tape_of("main").append_message({"role": "user", "content": "hi"})
    team.handoff("h1", to="rev")
    frame = read_tapes(tmp_path).drop_duplicates("tape_name")
    agents = dict(
        zip(frame["tape_name"], frame["agent"].astype(object).where(frame["agent"].notna(), None), strict=True)
    )
    assert agents == {"notes~draft": None, "nb": "main", "nb~rev": "rev"}
    assert "draft" not in Team(Tape("notes", store)).names
