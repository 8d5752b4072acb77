"""Tapes as ATIF trajectories, validated by Harbor's own pydantic models (see tests/harness/harbor.py)."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
from harness.harbor import harbor_trajectories
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bub_nb.agent import Agent, ScriptedModel
from bub_nb.errors import ModelError
from bub_nb.export import ATIF_VERSION, atif
from bub_nb.export.atif import trajectory
from bub_nb.tape import FileTapeStore, Tape, TapeEntry
from bub_nb.tape.events import run_usage


@pytest.fixture(scope="module")
def harbor() -> Any:
    """Harbor's own ``Trajectory`` model."""
    return harbor_trajectories().Trajectory


def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


def working_tape(tape: Tape) -> None:
    replies = [
        {
            "tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}, {"name": "missing"}],
            "usage": {"prompt_tokens": 40, "completion_tokens": 6},
        },
        {"content": "5", "usage": {"prompt_tokens": 50, "completion_tokens": 1}},
    ]
    Agent(tape, model=ScriptedModel(replies), tools=[add]).run("What is 2 + 3?")
    Agent(tape, model=ScriptedModel(['{"summary": "what is 2 + 3 [#6]"}'])).handoff("phase/two", summarize=True)
    with pytest.raises(ModelError):
        Agent(tape, model=ScriptedModel([ModelError("endpoint down")])).run("Still there?")
    Agent(tape, model="offline").run("Hello again")


def test_a_tape_is_a_trajectory_harbor_accepts(tape: Tape, harbor: Any) -> None:
    working_tape(tape)
    document = atif(tape)

    validated = harbor.model_validate(json.loads(json.dumps(document)))
    assert validated.schema_version == ATIF_VERSION == "ATIF-v1.8"
    assert validated.session_id == tape.name and validated.agent.name == "bub_nb"
    assert validated.to_json_dict() == json.loads(json.dumps(document)), "nothing is dropped or coerced"


def test_steps_tool_calls_observations_and_metrics_follow_the_tape(tape: Tape, harbor: Any) -> None:
    working_tape(tape)
    steps = harbor.model_validate(atif(tape)).steps

    user = [s.message for s in steps if s.source == "user"]
    assert user == ["What is 2 + 3?", "Still there?", "Hello again"]
    (calling,) = [s for s in steps if s.tool_calls]
    assert [(c.function_name, c.arguments) for c in calling.tool_calls] == [("add", {"a": 2, "b": 3}), ("missing", {})]
    results = calling.observation.results
    assert [r.source_call_id for r in results] == [c.tool_call_id for c in calling.tool_calls]
    assert results[0].content == "5" and results[1].extra == {"bub": {"error": "not_found"}}
    answer = next(s for s in steps if s.source == "agent" and s.message == "5")
    assert (answer.metrics.prompt_tokens, answer.metrics.completion_tokens) == (90, 7)
    assert answer.metrics.extra == {"bub": {"scope": "turn", "model_calls": 2}}
    assert calling.model_name == answer.model_name == "scripted" and calling.metrics is None


def test_anchors_handoffs_summaries_and_errors_are_bub_extensions(tape: Tape, harbor: Any) -> None:
    working_tape(tape)
    document = atif(tape)
    extras = [step["extra"]["bub"] for step in document["steps"]]

    anchors = [e for e in extras if "anchor" in e]
    assert [a["anchor"]["name"] for a in anchors] == ["session/start", "phase/two"]
    phase_two = anchors[-1]
    assert phase_two["handoff"]["name"] == "phase/two" and len(phase_two["entries"]) == 2
    assert phase_two["anchor"]["state"]["summary"] == '{"summary": "what is 2 + 3 [#6]"}'
    assert any(e.get("summary", {}).get("anchor") == "phase/two" for e in extras)
    errors = [e["error"]["kind"] for e in extras if "error" in e]
    assert errors == ["tool.not_found", "model_error"]
    failed_run = next(e["run"] for e in extras if e.get("run", {}).get("status") == "error")
    assert failed_run["model"] == "scripted"
    assert document["extra"]["bub"] == {"extension_version": 1, "tape": tape.name, "entries": len(tape)}
    covered = sorted(entry for e in extras for entry in e["entries"])
    assert covered == [entry.id for entry in tape.read()], "every entry lands in exactly one step"


def test_final_metrics_are_the_sums_of_the_run_events(tape: Tape) -> None:
    working_tape(tape)
    runs = [u for u in map(run_usage, tape.read()) if u is not None]
    final = atif(tape)["final_metrics"]
    assert final["total_prompt_tokens"] == sum(u["prompt_tokens"] for u in runs)
    assert final["total_completion_tokens"] == sum(u["completion_tokens"] for u in runs)
    assert final["extra"] == {"bub": {"turns": 3}} and final["total_steps"] == len(atif(tape)["steps"])


def test_an_empty_tape_and_a_bub_tape_are_trajectories_too(tmp_path: Path, harbor: Any) -> None:
    empty = Tape("empty", FileTapeStore(tmp_path))
    assert harbor.model_validate(atif(empty)).steps[0].extra == {"bub": {"entries": [], "empty": True}}
    entries = [
        TapeEntry(
            1, "message", {"role": "user", "content": [{"type": "text", "text": "Hi"}]}, {}, "2026-01-01T00:00:01Z"
        ),
        TapeEntry(2, "tool_result", {"results": ["orphan"]}, {}, "not a date"),
        TapeEntry(3, "event", {"name": "run", "data": {"status": "ok", "usage": None}}, {}, "2026-01-01T00:00:03Z"),
    ]
    validated = harbor.model_validate(trajectory("bub", entries))
    assert validated.steps[0].message == "Hi"
    assert validated.steps[1].extra["bub"]["entry"]["kind"] == "tool_result"
    assert validated.steps[1].extra["bub"]["run"]["status"] == "ok"
    assert validated.steps[1].timestamp is None, "a date that is no date leaves the step without a timestamp"


def test_retracted_entries_stay_in_their_steps_and_are_marked(tape: Tape, harbor: Any) -> None:
    working_tape(tape)
    prompt = next(e for e in tape.read() if e.kind == "message" and e.payload.get("content") == "Hello again")
    tape.retract(prompt.id, reason="asked by mistake")
    document = atif(tape)
    harbor.model_validate(json.loads(json.dumps(document)))
    marked = [step for step in document["steps"] if step["extra"]["bub"].get("retracted")]
    assert [step["extra"]["bub"]["retracted"] for step in marked] == [[prompt.id]]
    assert marked[0]["source"] == "user" and marked[0]["message"] == "Hello again"


def test_the_projection_is_deterministic(tape: Tape) -> None:
    import bub_nb

    working_tape(tape)
    assert json.dumps(atif(tape)) == json.dumps(bub_nb.export.atif(tape))


REPLY = st.one_of(
    st.text(max_size=8),
    st.builds(lambda n: {"tool_calls": [{"name": "add", "arguments": {"a": n, "b": 1}}]}, st.integers(-5, 5)),
    st.just({"tool_calls": [{"name": "nope", "arguments": "not json"}]}),
    st.just(ModelError("down")),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(REPLY, min_size=1, max_size=4), min_size=1, max_size=4))
def test_any_run_of_turns_validates(tmp_path: Path, harbor: Any, turns: list[list[Any]]) -> None:
    tape = Tape(f"fuzz-{len(list(tmp_path.iterdir()))}", FileTapeStore(tmp_path))
    for replies in turns:
        with contextlib.suppress(ModelError):
            Agent(tape, model=ScriptedModel([*replies, "done"]), tools=[add], max_steps=3).run("Go")
    harbor.model_validate(atif(tape))
