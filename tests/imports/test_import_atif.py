"""ATIF trajectories become tapes; a tape exported to ATIF and imported back keeps its conversation and anchors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from harness.harbor import harbor_trajectories
from harness.logs import DATA

from bub_nb import import_log, open_tape
from bub_nb.agent import Agent, OpenAIModel
from bub_nb.errors import ModelError
from bub_nb.imports.draft import SOURCE
from bub_nb.tape import Tape, TapeEntry
from bub_nb.testing import OpenAICompatibleServer

EXAMPLE = DATA / "atif" / "rfc-0001-example.json"


def test_the_specification_example_maps_steps_parallel_calls_and_metrics(home: Path) -> None:
    report = import_log(EXAMPLE, home=home)

    assert (report.format, report.records, report.mapped, report.kept) == ("atif", 3, 3, 0)
    assert report.session["schema_version"] == "ATIF-v1.4"
    assert report.session["agent"]["name"] == "harbor-agent"
    tape = open_tape(report.tape, home=home)
    [call] = tape.read(kinds=["tool_call"])
    assert call.payload["content"] == "I will search for the current trading price and volume for GOOGL."
    assert [c["id"] for c in call.payload["calls"]] == ["call_price_1", "call_volume_2"]
    assert json.loads(call.payload["calls"][1]["function"]["arguments"]) == {"ticker": "GOOGL", "metric": "volume"}
    assert call.meta["reasoning"].startswith("The request requires two data points")
    assert call.date == "2025-10-11T10:30:02Z"
    [results] = tape.read(kinds=["tool_result"])
    assert results.payload["results"] == [
        "GOOGL is currently trading at $185.35 (Close: 10/11/2025)",
        "GOOGL volume: 1.5M shares traded.",
    ]
    frame = tape.to_frame()
    runs = frame[frame["name"] == "run"]
    assert runs["prompt_tokens"].tolist() == [520, 600]
    assert runs["completion_tokens"].tolist() == [80, 44]
    assert runs.iloc[0]["payload"]["data"]["usage"]["prompt_tokens_details"] == {"cached_tokens": 200}
    assert runs.iloc[0]["payload"]["data"]["cost_usd"] == 0.00045
    assert [m["role"] for m in tape.view(None).messages] == ["user", "assistant", "tool", "tool", "assistant"]


def test_results_without_a_source_call_id_answer_the_calls_of_their_step(tmp_path: Path, home: Path) -> None:
    """Real producers leave ``source_call_id`` out; the results then answer the step's calls in order."""
    document = json.loads(EXAMPLE.read_text())
    for result in document["steps"][1]["observation"]["results"]:
        del result["source_call_id"]
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps(document))

    tape = open_tape(import_log(path, home=home).tape, home=home)

    assert [m["role"] for m in tape.view(None).messages] == ["user", "assistant", "tool", "tool", "assistant"]


def exported_trajectory(tape: Tape) -> dict[str, Any]:
    """The tape as ATIF, by bub_nb's exporter; the test skips while there is none."""
    export = pytest.importorskip("bub_nb.export", reason="bub_nb.export (the ATIF exporter) is not in this build yet")
    atif = getattr(export, "atif", None)
    if atif is None:
        pytest.skip("bub_nb.export has no atif() yet, so a tape cannot go to ATIF and back")
    trajectory = atif(tape)
    for method in ("to_json_dict", "model_dump"):
        if hasattr(trajectory, method):
            trajectory = getattr(trajectory, method)()
    return json.loads(trajectory) if isinstance(trajectory, str | bytes) else dict(trajectory)


def conversation(tape: Tape) -> dict[str, Any]:
    """What a round trip must keep: messages, tool calls and results, anchors, events, system prompts and errors."""
    entries = tape.read()
    return {
        "messages": [(e.payload["role"], e.payload["content"]) for e in entries if e.kind == "message"],
        "calls": [
            (c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
            for e in entries if e.kind == "tool_call" for c in e.payload["calls"]
        ],
        "results": [r for e in entries if e.kind == "tool_result" for r in e.payload["results"]],
        "anchors": [(a.name, a.state) for a in tape.anchors(limit=None)],
        "events": [(e.name, e.payload.get("data")) for e in entries if e.kind == "event" and e.name != SOURCE],
        "system": [e.payload["content"] for e in entries if e.kind == "system"],
        "errors": [e.payload for e in entries if e.kind == "error"],
    }  # fmt: skip


def test_a_tape_exported_to_atif_and_imported_back_keeps_messages_calls_and_anchors(tmp_path: Path, home: Path) -> None:
    original = open_tape("round-trip", home=home)
    original.handoff("session/start", {"owner": "human"})
    original.append_system("Answer briefly.")
    original.append_message({"role": "user", "content": "What is 2 + 3?"})
    call = {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'}}
    original.append_tool_call([call])
    original.append_tool_result(["5"])
    original.append_error("tool.failed", "The second call failed", {"tool": "add"})
    original.append_message({"role": "assistant", "content": "2 + 3 is 5."})
    original.append(TapeEntry.event("run", {"status": "ok", "usage": {"prompt_tokens": 9, "completion_tokens": 4,
                                                                      "total_tokens": 13}, "model": "m"}))  # fmt: skip
    original.handoff("phase/two", {"summary": "added two numbers"})
    original.append_message({"role": "user", "content": "Thanks"})
    original.append_message({"role": "assistant", "content": "You are welcome."})
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps(exported_trajectory(original)))

    imported = open_tape(import_log(path, format="atif", name="round-trip-back", home=home).tape, home=home)

    assert conversation(imported) == conversation(original)


def test_a_real_harbor_run_pairs_results_without_call_ids_and_keeps_screenshots(home: Path) -> None:
    """A computer-use run Harbor recorded (ATIF-v1.6): 51 steps, parallel calls, results without source_call_id."""
    report = import_log(DATA / "atif" / "harbor-oncall-debug.trajectory.json", home=home)

    assert (report.records, report.mapped, report.kept) == (51, 51, 0)
    assert report.kinds == {"event": 51, "message": 10, "tool_call": 41, "tool_result": 41}
    tape = open_tape(report.tape, home=home)
    calls = [c for e in tape.read(kinds=["tool_call"]) for c in e.payload["calls"]]
    results = [r for e in tape.read(kinds=["tool_result"]) for r in e.payload["results"]]
    assert len(calls) == len(results) == 54
    assert not [r for r in results if isinstance(r, dict)]  # every call has its own result: none is missing
    screenshot = results[0][0]
    assert screenshot["type"] == "image" and screenshot["source"]["path"] == "images/step_2_computer_screenshot_2.png"
    view = tape.view(None)
    assert view.dropped == () and len(view.messages) == 105
    runs = tape.to_frame().query("name == 'run'")
    assert (len(runs), runs["prompt_tokens"].sum(), runs["completion_tokens"].sum()) == (50, 789477, 3079)
    assert tape.read()[1].date == "2026-02-09T08:20:01.128714+00:00"


@pytest.mark.parametrize("sample", ["rfc-0001-example.json", "harbor-oncall-debug.trajectory.json"])
def test_the_samples_are_trajectories_harbors_own_models_accept(sample: str) -> None:
    """The ATIF samples are what Harbor itself validates (its own models: tests/harness/harbor.py)."""
    trajectory = harbor_trajectories().Trajectory.model_validate_json(
        (DATA / "atif" / sample).read_text(encoding="utf-8")
    )

    assert len(trajectory.steps) == {"rfc-0001-example.json": 3}.get(sample, 51)


def turns_of(tape: Tape) -> list[tuple[str, Any]]:
    return [(e.payload["data"]["status"], e.payload["data"].get("usage")) for e in tape.read() if e.name == "run"]


def test_a_failed_turn_keeps_its_run_event_through_atif_and_back(
    tmp_path: Path, home: Path, openai_server: OpenAICompatibleServer
) -> None:
    """A turn whose model call failed has no agent step: its run event rides on its error step and comes back."""
    original = open_tape("five-and-one", home=home)
    model = OpenAIModel("m", api_key="k", base_url=openai_server.base_url, max_retries=0)
    agent = Agent(original, model)
    for number in range(5):
        openai_server.reply(f"Answer {number}.", usage={"prompt_tokens": 10, "completion_tokens": 2})
        agent.run(f"Question {number}")
    openai_server.fail(500, "The model is down")
    with pytest.raises(ModelError):
        agent.run("Question 5")
    assert [status for status, _ in turns_of(original)] == ["ok"] * 5 + ["error"]
    first = exported_trajectory(original)
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps(first))

    imported = open_tape(import_log(path, format="atif", name="five-and-one-back", home=home).tape, home=home)
    again = exported_trajectory(imported)

    assert turns_of(imported) == turns_of(original)
    assert imported.to_frame().tape.runs()["status"].tolist() == ["ok"] * 5 + ["error"]
    assert again["final_metrics"]["total_steps"] == first["final_metrics"]["total_steps"]
    assert again["final_metrics"]["extra"]["bub"]["turns"] == first["final_metrics"]["extra"]["bub"]["turns"] == 6
    assert [s["source"] for s in again["steps"]] == [s["source"] for s in first["steps"]]


def test_copied_context_is_marked_on_import_and_on_export(tmp_path: Path, home: Path) -> None:
    document = json.loads(EXAMPLE.read_text())
    document["steps"][0]["is_copied_context"] = True  # the user's request, carried over from an earlier run
    path = tmp_path / "copied.json"
    path.write_text(json.dumps(document))

    tape = open_tape(import_log(path, home=home).tape, home=home)
    copied = [e for e in tape.read() if e.meta.get("copied_context")]
    exported = exported_trajectory(tape)

    assert [(e.kind, e.payload.get("role")) for e in copied] == [("message", "user")]
    assert [s["source"] for s in exported["steps"] if s.get("is_copied_context")] == ["user"]
    harbor_trajectories().Trajectory.model_validate(exported)


def test_a_forked_session_s_copied_entries_are_copied_context(home: Path) -> None:
    parent = open_tape("parent", home=home)
    parent.handoff("phase/work", {"summary": "start"})
    parent.append_message({"role": "user", "content": "Carry this over"})
    parent.append_message({"role": "assistant", "content": "Carried."})
    child = parent.fork_session("child", from_anchor="phase/work", intention="go on")
    child.append_message({"role": "user", "content": "New work"})

    steps = exported_trajectory(child)["steps"]

    copied = [s["message"] for s in steps if s.get("is_copied_context")]
    assert "Carry this over" in copied and "Carried." in copied and "New work" not in copied


def test_a_trajectory_with_no_times_is_dated_by_its_file_and_says_every_step_was_undated(tmp_path: Path) -> None:
    """Harbor writes ``timestamp`` as optional: a trajectory without any gets its file's time, never the import's,
    and the report counts each record that had none."""
    import os

    trajectory = json.loads((DATA / "atif" / "harbor-oncall-debug.trajectory.json").read_text())
    for step in trajectory["steps"]:
        step.pop("timestamp", None)
    path = tmp_path / "no-times.trajectory.json"
    path.write_text(json.dumps(trajectory))
    os.utime(path, (1_700_000_000, 1_700_000_000))  # 2023-11-14T22:13:20Z
    report = import_log(path, home=tmp_path / "home")
    dates = {entry.date for entry in open_tape(report.tape, home=tmp_path / "home").read()}
    assert dates == {"2023-11-14T22:13:20+00:00"}
    assert report.undated == len(trajectory["steps"]) and report.undated > 0
