"""Every frame helper gives the numbers a plain DuckDB query over the raw JSON Lines gives, on generated homes:
Bub's and bub_nb's shapes of failed tool calls, forks, resets, retractions, agents, torn lines, bad bytes and
odd dates."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from harness.duckdb_oracle import Oracle
from harness.homes import STYLES, write_home
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bub_nb.tape import read_tapes

pytestmark = pytest.mark.usefixtures("reader")  # every test on each reader (conftest.py)

TOOLS = ("bash", "web_fetch", "fs.read")
PHASES = ("session/start", "phase/plan", "phase/build", "auto_handoff/context_overflow", "memory/open", "")
OUTCOMES = ("ok", "bub_failed", "bub_nb_failed", "error_key", "unanswered")


STEP = st.one_of(
    st.tuples(st.just("anchor"), st.sampled_from(PHASES)),
    st.tuples(st.just("user"), st.sampled_from(["alpha", "beta"])),
    st.tuples(
        st.just("turn"),
        st.sampled_from(STYLES),
        st.lists(st.tuples(st.sampled_from(TOOLS), st.sampled_from(OUTCOMES)), max_size=3),
        st.tuples(st.integers(0, 900), st.integers(0, 90)),
    ),
    st.tuples(st.just("retract"), st.integers(0, 40), st.integers(0, 3)),
    st.tuples(st.just("unretract"), st.integers(0, 40)),
    st.tuples(st.just("bad_byte")),
    st.tuples(st.just("garbage")),
)
TAPE = st.fixed_dictionaries(
    {
        "steps": st.lists(STEP, max_size=14),
        "bub": st.booleans(),
        "dates": st.sampled_from(["plain", "zulu", "naive", "offset", "timestamp"]),
        "agent": st.booleans(),
        "reset": st.booleans(),
        "torn": st.booleans(),
        "fork": st.one_of(st.none(), st.integers(0, 30)),
    }
)


# -- the frame's answers, in the oracle's terms -----------------------------------------------------------


def _archived(frame: pd.DataFrame) -> pd.Series:
    return frame["archived"] if "archived" in frame.columns else pd.Series(False, index=frame.index)


def frame_kinds(frame: pd.DataFrame) -> dict[tuple[str, bool, str], int]:
    counts = frame.assign(archived=_archived(frame)).groupby(["tape_name", "archived", "kind"], observed=True).size()
    return {(tape, bool(archived), str(kind)): int(n) for (tape, archived, kind), n in counts.items()}


def frame_phases(frame: pd.DataFrame) -> dict[tuple[str, bool, int | None], tuple[str | None, int]]:
    keyed = frame.assign(archived=_archived(frame), at=frame["phase_id"].astype("object"))
    out = {}
    for (tape, archived, at), rows in keyed.groupby(["tape_name", "archived", "at"], dropna=False, sort=False):
        phase = rows["phase"].iloc[0]
        key = (tape, bool(archived), None if pd.isna(at) else int(at))
        out[key] = (None if pd.isna(phase) else phase, len(rows))
    return out


def frame_turns(frame: pd.DataFrame, **forked: bool) -> dict[tuple[str, bool], int]:
    runs = frame.tape.runs(**forked)
    archived = runs["archived"] if "archived" in runs.columns else pd.Series(False, index=runs.index)
    counts = runs.assign(archived=archived).groupby(["tape_name", "archived"]).size()
    return {(tape, bool(archived)): int(n) for (tape, archived), n in counts.items()}


def frame_tokens(frame: pd.DataFrame, **forked: bool) -> dict[tuple[str, bool, int | None], tuple[int, int, int]]:
    usage = frame.tape.usage(by=["tape_name", "phase"], **forked).reset_index()
    return {
        (tape, False, None if pd.isna(at) else int(at)): (int(turns), int(tokens_in), int(tokens_out))
        for tape, at, turns, tokens_in, tokens_out in usage[
            ["tape_name", "phase_id", "turns", "tokens_in", "tokens_out"]
        ].itertuples(index=False)
    }


def frame_calls(frame: pd.DataFrame, **forked: bool) -> dict[tuple[str, bool, str], tuple[int, int]]:
    calls = frame.tape.tool_calls(**forked)
    failed = (calls["ok"] == False).fillna(False)  # noqa: E712 - a call without a result has not failed
    counts = calls.assign(failed=failed).groupby(["tape_name", "tool"]).agg(n=("failed", "size"), f=("failed", "sum"))
    return {(tape, False, tool): (int(n), int(f)) for (tape, tool), (n, f) in counts.iterrows()}


def flagged(frame: pd.DataFrame, column: str) -> set[tuple[str, bool, int]]:
    rows = frame[frame[column].astype(bool)]
    return {(t, bool(a), int(i)) for t, a, i in zip(rows["tape_name"], _archived(rows), rows["id"], strict=True)}


def read(home: Path, **options: Any) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the bad bytes' warning has its own test
        return read_tapes(home, **options)


def agree(home: Path) -> None:
    oracle = Oracle(home)
    frame = read(home)
    assert frame_kinds(frame) == oracle.kinds()
    assert frame_phases(frame) == oracle.phases()
    assert frame_turns(frame) == oracle.turns()
    assert frame_turns(frame, forked=True) == oracle.turns(forked=True)
    assert frame_tokens(frame) == oracle.tokens_per_phase()
    assert frame_tokens(frame, forked=True) == oracle.tokens_per_phase(forked=True)
    assert frame_calls(frame) == oracle.tool_calls()
    assert frame_calls(frame, forked=True) == oracle.tool_calls(forked=True)
    assert flagged(frame, "retracted") == oracle.retracted()
    assert flagged(frame, "bad_bytes") == oracle.bad_bytes()
    everything = Oracle(home, include_archives=True)
    with_archives = read(home, include_archives=True)
    assert frame_kinds(with_archives) == everything.kinds()
    assert frame_phases(with_archives) == everything.phases()
    assert frame_turns(with_archives, forked=True) == everything.turns(forked=True)
    assert flagged(with_archives, "retracted") == everything.retracted()
    assert flagged(with_archives, "bad_bytes") == everything.bad_bytes()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tapes=st.lists(TAPE, min_size=1, max_size=5))
def test_every_helper_agrees_with_duckdb_on_generated_homes(tapes: list[dict[str, Any]], tmp_path_factory: Any) -> None:
    home = tmp_path_factory.mktemp("home")
    write_home(home, tapes)
    agree(home)


FAILING_HOME = [
    {"steps": [("anchor", "session/start"), ("turn", style, [("bash", "ok"), ("bash", outcome)], (10, 2))],
     "bub": style == "bub", "dates": "plain", "agent": False, "reset": False, "torn": False, "fork": None}
    for style in ("bub", "bub_nb") for outcome in ("bub_failed", "bub_nb_failed", "error_key")
]  # fmt: skip


def test_a_failure_is_recognised_in_every_shape_the_writers_give(tmp_path: Path) -> None:
    write_home(tmp_path, FAILING_HOME)
    calls = read(tmp_path).tape.tool_calls()
    assert len(calls) == 2 * len(FAILING_HOME)
    assert int((calls["ok"] == False).sum()) == len(FAILING_HOME)  # noqa: E712
    assert Oracle(tmp_path).failure_rates() == {"bash": 0.5}
    agree(tmp_path)


def test_a_fork_copy_counts_once_in_every_helper_unless_asked(tmp_path: Path) -> None:
    parent = {"steps": [("anchor", "phase/plan"), ("turn", "bub_nb", [("bash", "bub_nb_failed")], (5, 1))],
              "bub": False, "dates": "plain", "agent": False, "reset": False, "torn": False, "fork": None}  # fmt: skip
    write_home(tmp_path, [parent, {**parent, "steps": [], "fork": 0}])
    frame = read(tmp_path)
    assert (
        len(frame.tape.runs())
        == len(frame.tape.tool_calls())
        == int(frame.tape.usage(by="tape_name")["turns"].sum())
        == 1
    )
    assert len(frame.tape.runs(forked=True)) == len(frame.tape.tool_calls(forked=True)) == 2
    agree(tmp_path)


def test_a_bad_byte_keeps_its_entry_marked_and_read_tapes_warns_once(tmp_path: Path) -> None:
    spec = {"steps": [("bad_byte",), ("user", "alpha"), ("bad_byte",)], "bub": True, "dates": "plain",
            "agent": False, "reset": False, "torn": False, "fork": None}  # fmt: skip
    write_home(tmp_path, [spec, spec])
    with pytest.warns(UserWarning, match="4 entries") as caught:
        frame = read_tapes(tmp_path)
    assert len(caught) == 1
    marked = frame[frame["bad_bytes"]]
    assert len(marked) == 4 and marked["content"].str.contains("caf\ufffd").all()
    agree(tmp_path)


def test_an_archive_is_named_by_its_tape_and_marked_archived(tmp_path: Path) -> None:
    spec = {"steps": [("anchor", "phase/plan"), ("turn", "bub", [], (3, 1))], "bub": True, "dates": "plain",
            "agent": False, "reset": True, "torn": False, "fork": None}  # fmt: skip
    write_home(tmp_path, [spec])
    frame = read(tmp_path, include_archives=True)
    assert frame["tape_name"].nunique() == 1
    assert sorted(frame.groupby("archived").size().index.tolist()) == [False, True]
    agree(tmp_path)


def test_the_shipped_examples_failures_are_its_error_entries_and_agree_with_duckdb(example_home: Path) -> None:
    frame = read_tapes(example_home)
    calls = frame.tape.tool_calls()
    errors = frame.tape.kinds("error")
    failed = calls[calls["ok"] == False].groupby("tool").size().to_dict()  # noqa: E712
    assert failed == {"bash": 3} and errors["content"].str.contains("bash: Command exited with 1").sum() == 3
    agree(example_home)
