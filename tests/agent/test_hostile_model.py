"""A hostile model against a real tape: whatever it replies, the history stays, every reader ends, no secret lands.

Each example starts a tape with a few ordinary turns, a handoff and a memory zone, then lets
:class:`harness.hostile_model.HostileModel` play turns drawn by hypothesis. Afterwards every entry that
existed before is still readable at its id (on the tape or in an archive a reset left), each file still
reads in Bub's reader, every reader ends within bounded memory, and the environment's key and
the DSN's password are on no file. The CI run draws ``HOSTILE_EXAMPLES`` examples (30); the ``slow``
run draws ten times as many.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import tempfile
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from harness.hostile_model import (
    POINTED_CALLS,
    SECRET_KEY,
    HostileModel,
    Move,
    arguments,
    moves,
    play_on,
    texts,
)
from harness.tapes import bub_read
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from bub_nb.agent import Agent, OpenAIModel, ScriptedModel, ToolContext
from bub_nb.agent.eventloop import run_sync
from bub_nb.agent.tools import builtin_registry
from bub_nb.context import diff_views
from bub_nb.errors import BubNbError, ToolCallError
from bub_nb.tape import FileTapeStore, Tape
from bub_nb.tape.reports.transcript import transcript_markdown
from bub_nb.testing import OpenAICompatibleServer

EXAMPLES = int(os.environ.get("HOSTILE_EXAMPLES", "30"))
PEAK_BYTES = 400 * 2**20
"""What any reader may allocate at its peak: a few copies of the largest entry, never one object per cited id."""
MODES = ("last", "full", "phases", "window:3", "window:1000")
PASSWORD = "hostile-pw-4711"
FAILURES = (BubNbError, ValueError, RuntimeError, TimeoutError)


def seeded(home: Path) -> Tape:
    """A tape with history: two turns, a memory zone and a summarized handoff citing the first prompt."""
    tape = Tape("hostile", FileTapeStore(home / "tapes"))
    model = ScriptedModel(
        [
            "We compared pandas vs. polars.",
            {"tool_calls": [{"name": "memory_save", "arguments": {"content": "likes tea"}}]},
            "noted",
        ]
    )
    agent = Agent(tape, model)
    asked = agent.run("compare pandas and polars").entries[1].id
    agent.run("remember I like tea")
    summary = ScriptedModel([f"- Decided: polars [#{asked}].\nNext steps: benchmark"])
    Agent(tape, summary).handoff("phase/one", summarize=True)
    return tape


def tape_files(home: Path) -> list[Path]:
    return sorted((home / "tapes").glob("hostile.jsonl*"))


def snapshot(tape: Tape) -> dict[int, Any]:
    return {entry.id: (entry.kind, entry.payload) for entry in tape.read()}


def readable_somewhere(home: Path, before: dict[int, Any]) -> list[int]:
    """The ids of ``before`` found at that id, unchanged, in none of the tape's files (the tape or an archive)."""
    found: dict[int, list[Any]] = {}
    for path in tape_files(home):
        if path.suffix in (".idx", ".lock"):
            continue
        for record in bub_read(path):
            found.setdefault(record["id"], []).append((record["kind"], record["payload"]))
    return [entry_id for entry_id, value in before.items() if value not in found.get(entry_id, [])]


def bounded(label: str, action: Callable[[], Any]) -> Any:
    """Run a reader, failing when it allocates more than :data:`PEAK_BYTES` at its peak.

    That every reader returns at all is the behaviour checked here; how long it takes is measured by
    ``benchmarks/hostile.py``, since a busy machine makes any wall-clock bound fail for no fault of the code.
    """
    tracemalloc.start()
    try:
        result = action()
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert peak < PEAK_BYTES, f"{label} allocated {peak / 2**20:.0f} MB at its peak"
    return result


def every_reader_ends(tape: Tape) -> None:
    anchors = bounded("tape.anchors()", lambda: tape.anchors(None))
    bounded("the anchors' table", lambda: [(a.to_markdown(), a._repr_html_(), a.sources) for a in anchors])
    views = [bounded(f"view {mode}", lambda mode=mode: tape.view(mode)) for mode in MODES]
    for anchor in anchors[-3:]:
        views.append(bounded(f"view at {anchor.name}", lambda name=anchor.name: tape.view(f"anchor:{name}")))
    with contextlib.suppress(BubNbError):  # a tape whose turns were all refused has none to rebuild
        views.append(bounded("view_of_turn(-1)", lambda: tape.view_of_turn(-1)))
    bounded("diff_views", lambda: [diff_views(a, b) for a, b in itertools.pairwise(views)])
    bounded("the export", lambda: transcript_markdown(tape))
    frame = bounded("to_frame", tape.to_frame)
    bounded("usage", lambda: (frame.tape.usage(by="phase"), frame.tape.usage(by="model")))


def no_secret_on(home: Path) -> None:
    for path in tape_files(home):
        data = path.read_bytes()
        assert SECRET_KEY.encode() not in data, f"the API key is in {path.name}"
        assert PASSWORD.encode() not in data, f"the DSN's password is in {path.name}"


def hostile_turns(home: Path, turns: list[list[Any]], prompts: list[str]) -> None:
    tape = seeded(home)
    before = snapshot(tape)
    for script, prompt in zip(turns, prompts, strict=False):
        agent = Agent(tape, HostileModel(script), max_steps=4)
        count = len(tape)
        try:
            agent.run(prompt)
        except FAILURES as exc:
            if getattr(exc, "turn", None) is None and isinstance(exc, BubNbError):
                assert len(tape) == count, f"a refusal wrote to the tape: {exc}"
    missing = readable_somewhere(home, before)
    assert not missing, f"entries {missing} are on no file of the tape any more"
    for path in tape_files(home):
        if path.suffix not in (".idx", ".lock"):
            assert bub_read(path), f"Bub's reader finds nothing in {path.name}"
    assert len(bub_read(tape.path)) == len(tape)  # type: ignore[arg-type]
    every_reader_ends(tape)
    no_secret_on(home)


prompts = st.lists(st.one_of(st.just("go on"), texts()), min_size=1, max_size=3)


def pointed(*calls: tuple[str, str]) -> list[list[Move]]:
    """One turn whose model makes ``calls``, then answers."""
    return [[Move("calls", "", tuple(calls)), Move("text", "done")]]


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(turns=st.lists(moves(), min_size=1, max_size=3), prompts=prompts)
# What an injection tries first is played on every run, whatever hypothesis draws besides.
@example(turns=pointed(*POINTED_CALLS[:2]), prompts=["erase it"])
@example(turns=pointed(*POINTED_CALLS[2:7]), prompts=["cite everything"])
@example(turns=pointed(*POINTED_CALLS[7:]), prompts=["leak and flood"])
@example(turns=[[Move("cut", "x" * 1000), Move("text", "y")], [Move("overflow")]], prompts=["a", "b"])
def test_no_hostile_reply_loses_history_or_hangs_a_reader(
    turns: list[list[Any]], prompts: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET_KEY)
    with tempfile.TemporaryDirectory() as home:
        hostile_turns(Path(home), turns, prompts)


@pytest.mark.slow
@pytest.mark.timeout(3000)  # the suite's 300 s hang bound, for ten times the examples (263 s alone on a busy machine)
@settings(max_examples=EXAMPLES * 10, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(turns=st.lists(moves(8), min_size=1, max_size=5), prompts=prompts)
def test_no_hostile_reply_loses_history_or_hangs_a_reader_long(
    turns: list[list[Any]], prompts: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET_KEY)
    with tempfile.TemporaryDirectory() as home:
        hostile_turns(Path(home), turns, prompts)


@settings(max_examples=EXAMPLES * 2, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(name=st.sampled_from([tool.name for tool in builtin_registry()]), raw=arguments())
def test_a_refused_tool_call_writes_nothing(name: str, raw: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET_KEY)
    with tempfile.TemporaryDirectory() as home:
        tape = seeded(Path(home))
        count, last = len(tape), tape.last_id
        context = ToolContext(tape=tape, state={"run_id": "hostile"})
        try:
            builtin_registry().call_sync(name, raw, context)
        except ToolCallError:
            assert (len(tape), tape.last_id) == (count, last), f"{name}({raw[:80]!r}) was refused yet wrote"
        every_reader_ends(tape)
        no_secret_on(Path(home))


@settings(max_examples=max(5, EXAMPLES // 3), deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(turns=st.lists(moves(4), min_size=1, max_size=2), prompts=prompts)
@example(turns=pointed(*POINTED_CALLS[:2]), prompts=["erase it"])
def test_hostile_replies_on_the_wire_keep_the_history(
    turns: list[list[Any]], prompts: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET_KEY)
    with tempfile.TemporaryDirectory() as home, OpenAICompatibleServer() as server:
        tape = seeded(Path(home))
        before = snapshot(tape)
        model = OpenAIModel("hostile", base_url=server.base_url, api_key=SECRET_KEY, timeout=5, max_retries=0)
        try:
            for script, prompt in zip(turns, prompts, strict=False):
                play_on(server, script)
                with contextlib.suppress(*FAILURES):
                    Agent(tape, model, max_steps=4).run(prompt, stream=True)
        finally:
            run_sync(model.aclose())
        assert not readable_somewhere(Path(home), before)
        every_reader_ends(tape)
        no_secret_on(Path(home))
