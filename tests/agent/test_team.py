"""Several agents of one notebook: handoffs in seed 002's shape on both tapes, and who holds the conversation."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from bub_nb.agent import Agent, ScriptedModel
from bub_nb.agent.team import CONTEXT_HANDOFF, HANDOFF_FAILED, Team
from bub_nb.errors import AgentError, CitationError, NotHoldingError
from bub_nb.tape import FileTapeStore, MemoryTapeStore, Tape, TapeEntry


def team_of(store: object, *names: str) -> tuple[Team, dict[str, Agent]]:
    tape = Tape("nb", store)  # type: ignore[arg-type]
    agents = {name: Agent(tape, "offline", name=name) for name in names}
    return Team(tape, agents.values()), agents


def counts(team: Team) -> dict[str, int]:
    return {name: len(tape) for name, tape in team.tapes().items()}


def test_each_named_agent_works_on_a_tape_named_from_the_notebooks(tmp_path: Path) -> None:
    team, agents = team_of(FileTapeStore(tmp_path), "analyst", "reviewer")
    agents["analyst"].run("What is the mean of 1, 2 and 3?")
    assert agents["analyst"].tape.name == "nb~analyst" and agents["reviewer"].tape.name == "nb~reviewer"
    assert (tmp_path / "nb~analyst.jsonl").exists() and not (tmp_path / "nb.jsonl").exists()
    assert team.names == ["main", "analyst", "reviewer"] and team.holder() is None


def test_a_transfer_writes_the_seed_shape_on_both_tapes_and_moves_the_conversation() -> None:
    team, agents = team_of(MemoryTapeStore(), "analyst", "reviewer")
    agents["analyst"].run("What is the mean of 1, 2 and 3?")
    asked = next(e.id for e in agents["analyst"].tape.read() if e.kind == "message")
    done = team.handoff(
        "review/1",
        sender="analyst",
        to="reviewer",
        reason="Second opinion on the mean",
        summary=f"The user asked for a mean [#{asked}]",
        next_steps="Check the arithmetic",
        context_summary="a mean of three numbers",
    )
    anchor, event = done.sent[-2:]
    assert anchor.kind == "anchor" and event.payload["name"] == CONTEXT_HANDOFF
    record = event.payload["data"]
    assert set(record) == {"type", "from", "to", "timestamp", "content"}
    assert (record["from"], record["to"]) == ("agent:analyst", "agent:reviewer")
    intention = {"next_steps": "Check the arithmetic", "context_summary": "a mean of three numbers"}
    assert record["content"]["intention"] == intention
    assert record["content"]["ownership"] == "transfer"
    assert record["content"]["tape_ref"] == f"tape://nb~analyst/entry/{anchor.id - 1}"

    received = done.record["content"]
    assert received["refs"] == [f"tape://nb~analyst/entry/{asked}"]
    assert received["summary"] == f"The user asked for a mean [tape://nb~analyst/entry/{asked}]"
    assert received["anchor"] == f"tape://nb~analyst/entry/{anchor.id}"
    reviewer = agents["reviewer"].tape
    assert reviewer.resolve(received["refs"][0]).payload["content"] == "What is the mean of 1, 2 and 3?"
    assert reviewer.resolve(received["anchor"]) == anchor
    assert reviewer.view().anchor is not None and reviewer.view().anchor.name == "review/1"

    assert team.holder() == "reviewer"
    before = counts(team)
    with pytest.raises(NotHoldingError, match=r"'analyst' handed the conversation to 'reviewer'.*'reviewer' holds it"):
        agents["analyst"].run("Anything else?")
    assert counts(team) == before
    agents["reviewer"].run("Is the mean right?")
    team.handoff("review/done", to="analyst", summary="Checked")  # the holder hands it back
    assert team.holder() == "analyst"
    agents["analyst"].run("Thanks")
    with pytest.raises(NotHoldingError):
        agents["reviewer"].run("More?")


def test_sharing_moves_nothing_and_both_agents_run_on() -> None:
    team, agents = team_of(MemoryTapeStore(), "analyst", "reviewer")
    agents["analyst"].run("hello")
    done = team.handoff("look", sender="analyst", to="reviewer", share=True)
    assert done.ownership == "share" and team.holder() is None
    agents["analyst"].run("still here")
    agents["reviewer"].run("me too")


@pytest.mark.parametrize(
    ("sender", "to", "name", "summary", "match", "error"),
    [
        ("analyst", "nobody", "h", None, "No agent named 'nobody'", AgentError),
        ("analyst", "analyst", "h", None, "cannot hand the conversation to itself", AgentError),
        ("analyst", "reviewer", "memory/x", None, "reserved", Exception),
        ("analyst", "reviewer", "h", "see [#999]", "cites \\[#999\\]", CitationError),
        ("ghost", "reviewer", "h", None, "No agent named 'ghost'", AgentError),
    ],
)
def test_a_refused_handoff_writes_nothing_on_either_tape(
    sender: str, to: str, name: str, summary: str | None, match: str, error: type[Exception]
) -> None:
    team, agents = team_of(MemoryTapeStore(), "analyst", "reviewer")
    agents["analyst"].run("hello")
    before = counts(team)
    with pytest.raises(error, match=match):
        team.handoff(name, sender=sender, to=to, summary=summary)
    assert counts(team) == before


@pytest.mark.parametrize(
    ("state", "match"),
    [(["not", "an", "object"], "an object with text keys"), ({"refs": []}, "'refs' is the handoff's own")],
)
def test_a_bad_state_is_refused_before_any_write(state: object, match: str) -> None:
    team, agents = team_of(MemoryTapeStore(), "analyst", "reviewer")
    agents["analyst"].run("hello")
    before = counts(team)
    with pytest.raises(AgentError, match=match):
        team.handoff("h", sender="analyst", to="reviewer", state=state)  # type: ignore[arg-type]
    assert counts(team) == before


class FailingFor(MemoryTapeStore):
    """A store whose writes to one tape fail, as a full disk or a dropped connection would."""

    def __init__(self, failing: str) -> None:
        super().__init__()
        self.failing = failing

    def append(self, tape: str, entries: Sequence[TapeEntry]) -> list[TapeEntry]:
        if tape == self.failing:
            raise OSError(28, "No space left on device")
        return super().append(tape, entries)


def test_a_handoff_failing_between_its_two_writes_is_marked_and_never_reads_as_complete() -> None:
    store = FailingFor("nb~reviewer")
    team, agents = team_of(store, "analyst", "reviewer")
    agents["analyst"].run("hello")
    with pytest.raises(AgentError, match=r"failed on tape 'nb~reviewer'.*marked failed"):
        team.handoff("review/1", sender="analyst", to="reviewer", summary="hi")
    analyst = agents["analyst"].tape.read()
    anchor = next(e for e in reversed(analyst) if e.kind == "anchor")
    assert analyst[-1].payload["name"] == HANDOFF_FAILED and analyst[-1].payload["data"]["anchor"] == anchor.id
    assert not store.exists("nb~reviewer")
    assert team.history() == [] and team.holder() is None
    agents["analyst"].run("still mine")  # the sender was never refused: the conversation did not move


def test_a_summarized_handoff_cites_the_senders_entries() -> None:
    tape = Tape("nb", MemoryTapeStore())
    analyst = Agent(
        tape,
        ScriptedModel(["The mean is 2.", "The user asked what the mean of 1, 2 and 3 is [#6]; it is 2 [#7]."]),
        name="a",
    )
    team = Team(tape, [analyst, "b"])
    analyst.run("What is the mean of 1, 2 and 3?")
    done = team.handoff("review", sender="a", to="b", summarize=True)
    assert any(e.kind == "event" and e.payload["name"] == "summary" for e in done.sent)
    assert done.record["content"]["refs"] == ["tape://nb~a/entry/6", "tape://nb~a/entry/7"]


def test_a_share_to_an_agent_that_handed_the_conversation_away_lets_it_run_again_without_moving_the_holder() -> None:
    team, agents = team_of(MemoryTapeStore(), "analyst", "critic")
    agents["analyst"].run("hello")
    team.handoff("to-critic", sender="analyst", to="critic")
    agents["critic"].run("checked")
    team.handoff("look-too", to="analyst", share=True)
    assert team.holder() == "critic"
    agents["analyst"].run("I may go on")
    agents["critic"].run("and so may I")


class InterruptedFor(MemoryTapeStore):
    """A store where an interrupt (Ctrl-C) lands while one tape is written."""

    def __init__(self, failing: str) -> None:
        super().__init__()
        self.failing = failing

    def append(self, tape: str, entries: Sequence[TapeEntry]) -> list[TapeEntry]:
        if tape == self.failing:
            raise KeyboardInterrupt
        return super().append(tape, entries)


def test_an_interrupt_between_the_two_writes_is_marked_too_and_goes_on() -> None:
    team, agents = team_of(InterruptedFor("nb~reviewer"), "analyst", "reviewer")
    agents["analyst"].run("hello")
    with pytest.raises(KeyboardInterrupt):
        team.handoff("review/1", sender="analyst", to="reviewer")
    last = agents["analyst"].tape.read()[-1]
    assert last.payload["name"] == HANDOFF_FAILED and last.payload["data"]["error"] == "KeyboardInterrupt"
    assert team.holder() is None


def test_a_model_naming_an_agent_that_does_not_exist_gets_the_refusal_as_its_tool_result() -> None:
    tape = Tape("nb", MemoryTapeStore())
    call = {"name": "tape_handoff", "arguments": {"name": "specialist", "to": "ghost"}}
    analyst = Agent(tape, ScriptedModel([{"tool_calls": [call]}, "I will go on myself."]), name="analyst")
    team = Team(tape, [analyst, "reviewer"])
    turn = analyst.run("Get this reviewed")
    results = [e.payload["results"][0] for e in turn.entries if e.kind == "tool_result"]
    assert "No agent named 'ghost'" in str(results[0]) and turn.text == "I will go on myself."
    assert not any(e.kind == "anchor" and e.name == "specialist" for e in analyst.tape.read())
    assert team.history() == [] and not tape.base_store.exists("nb~reviewer")


def test_text_a_model_hands_on_is_bounded_like_a_tool_result_and_says_so_in_one_line() -> None:
    tape = Tape("nb", MemoryTapeStore())
    arguments = {"name": "review", "to": "reviewer", "reason": "r" * 100_000, "summary": "s" * 50_000}
    call = {"name": "tape_handoff", "arguments": arguments}
    analyst = Agent(tape, ScriptedModel([{"tool_calls": [call]}, "Handed on."]), name="analyst", result_budget=500)
    team = Team(tape, [analyst, "reviewer"])
    analyst.run("Get this reviewed")
    content = team.tape_of("reviewer").last_anchor().state[CONTEXT_HANDOFF]["content"]
    for key, total in (("reason", 100_000), ("summary", 50_000)):
        text = content[key]
        kept, _, note = text.rpartition("\n")
        assert len(text) < 5_000 and set(kept) == {key[0]}, key
        assert note.startswith(f"[cut: this {key} was ≈") and "over the budget of 500" in note and "\n" not in note
        assert total > len(kept)
