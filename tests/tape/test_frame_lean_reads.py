"""Lean reads: ``read_tapes(kinds=..., since=...)`` decodes only the lines it may keep, and gives exactly the rows,
phases and notebooks that filtering the whole home's frame gives."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from harness.hostile_lines import HOSTILE, MISREAD, tape_lines
from hypothesis import example, given, settings
from hypothesis import strategies as st

from bub_nb.tape import read_tapes
from bub_nb.tape.stores.wanted import WantedLines

pytestmark = pytest.mark.usefixtures("reader")  # every test on each reader (conftest.py)

DATES = st.sampled_from(
    [
        "2026-02-09T23:59:59.999999+00:00",
        "2026-02-10T00:00:00+00:00",
        "2026-02-10T01:00:00Z",
        "2026-02-10T02:00:00+03:00",  # 23:00 on the 9th, UTC
        "2026-02-11",
        "2026-03-01T12:00:00.5+00:00",
        "2026-02-10T00:00:00.5Z",
        "2026-02-10T00:00:00",  # no zone: UTC
        "2026-02-10T00:00:00.123456789+00:00",
        "2026-02-10T00:00:00.25",
        "2026-02-10T00:00:00.2500001Z",
        "2026-13-10T00:00:00+00:00",  # spelled as a UTC date, but no date
        "2026-02-10 01:00:00+00:00",
        "not a date",
        "",
        None,  # no date: the line carries a float timestamp instead
    ]
)
PHASES = st.sampled_from(["phase/plan", "phase/build", "auto_handoff/context_overflow", "memory/open", "session/start"])
LINES = st.lists(
    st.tuples(
        st.sampled_from(["anchor", "message", "run", "notebook", "tool_call", "tool_result", "error", "junk"]),
        PHASES,
        DATES,
    ),
    max_size=25,
)


def entry_line(number: int, kind: str, name: str, date: str | None) -> str:
    """One line of a tape, as bub_nb or Bub would write it (and a few that are not entries at all)."""
    if kind == "junk":
        return '{"id": "x", "kind": "message"}' if number % 2 else "not json at all"
    payloads: dict[str, tuple[str, dict[str, Any]]] = {
        "anchor": ("anchor", {"name": name, "state": {"owner": "human"}}),
        "message": ("message", {"role": "user", "content": f"{name} said {number}"}),
        "run": ("event", {"name": "run", "data": {"status": "ok", "usage": {"prompt_tokens": number}}}),
        "notebook": ("event", {"name": "notebook", "data": {"path": f"/lessons/{name}.ipynb"}}),
        "tool_call": ("tool_call", {"calls": [{"id": "c", "function": {"name": "fs_read", "arguments": "{}"}}]}),
        "tool_result": ("tool_result", {"results": [{"kind": "tool_error", "message": "anchor"}]}),
        "error": ("error", {"kind": "anchor", "message": "a payload that names a kind"}),
    }
    entry_kind, payload = payloads[kind]
    entry: dict[str, Any] = {"id": number, "kind": entry_kind, "payload": payload, "meta": {"run_id": f"r{number}"}}
    if date is None:
        entry["timestamp"] = 1770681600.0 + number  # 2026-02-10, give or take
    else:
        entry["date"] = date
    separators = (",", ":") if number % 3 else (", ", ": ")  # bub_nb's compact lines and Bub's spaced ones
    return json.dumps(entry, separators=separators)


def write_home(home: Path, tapes: list[list[tuple[str, str, str | None]]]) -> None:
    folder = home / "tapes"
    folder.mkdir(parents=True)
    for number, lines in enumerate(tapes):
        text = "".join(entry_line(row + 1, *line) + "\n" for row, line in enumerate(lines))
        (folder / f"tape-{number}.jsonl").write_text(text)


def filtered(whole: pd.DataFrame, kinds: list[str], since: str | None) -> pd.DataFrame:
    """What a lean read must give: the whole home's frame, filtered."""
    frame = whole
    if kinds:
        frame = frame[frame["kind"].isin(kinds)]
    if since is not None:
        frame = frame[frame["date"] >= pd.Timestamp(since, tz="UTC")]
    frame = frame.reset_index(drop=True)
    frame["kind"] = frame["kind"].cat.remove_unused_categories()
    return frame


@settings(max_examples=60, deadline=None)
@given(
    tapes=st.lists(LINES, max_size=3),
    kinds=st.lists(st.sampled_from(["message", "event", "anchor", "tool_call", "error"]), max_size=2, unique=True),
    since=st.sampled_from(
        [
            None,
            "2026-02-10",
            "2026-02-10T01:00:00",
            "2026-02-10T00:00:00.25",
            "2026-02-10T00:00:00.2500000005",
            "2026-02-20",
        ]
    ),
)
def test_a_lean_read_gives_the_rows_phases_and_notebooks_of_the_filtered_whole_frame(
    tapes: list[list[tuple[str, str, str | None]]], kinds: list[str], since: str | None
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder)
        write_home(home, tapes)
        whole = read_tapes(home)
        lean = read_tapes(home, kinds=kinds, since=since)
        pd.testing.assert_frame_equal(lean, filtered(whole, kinds, since))


@settings(max_examples=80, deadline=None)
@given(lines=tape_lines(), kinds=st.sampled_from([["message"], ["anchor"], ["event", "tool_result"]]))
@example(lines=[*HOSTILE, *MISREAD], kinds=["message"])
@example(lines=[*HOSTILE, *MISREAD], kinds=["anchor"])
def test_a_lean_read_of_hostile_lines_keeps_what_the_whole_read_keeps(lines: list[bytes], kinds: list[str]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "tapes").mkdir()
        (Path(folder) / "tapes" / "t.jsonl").write_bytes(b"".join(line + b"\n" for line in lines))
        whole = read_tapes(folder)
        pd.testing.assert_frame_equal(read_tapes(folder, kinds=kinds), filtered(whole, kinds, None))


def test_phase_survives_when_the_anchors_are_left_out(tmp_path: Path) -> None:
    write_home(
        tmp_path,
        [[("anchor", "phase/plan", "2026-01-01"), ("message", "x", "2026-02-11"), ("notebook", "trip", "2026-01-01")]],
    )
    lean = read_tapes(tmp_path, kinds=["message"], since="2026-02-10")
    assert lean[["id", "phase", "phase_id", "notebook"]].to_dict("records") == [
        {"id": 2, "phase": "phase/plan", "phase_id": 1, "notebook": "/lessons/trip.ipynb"}
    ]
    assert list(lean["kind"].cat.categories) == ["message"]


def test_only_the_wanted_lines_and_what_phases_need_are_decoded() -> None:
    lines = [entry_line(n, kind, "phase/plan", "2026-02-10") .encode() for n, kind in enumerate(
        ["anchor", "message", "run", "notebook", "tool_call", "junk"], start=1)]  # fmt: skip
    picked = WantedLines(frozenset({"message"})).pick(lines)
    assert picked == [lines[0], lines[1], lines[3], lines[5]]  # the anchor, the message, the notebook, the unreadable


@pytest.mark.parametrize("as_", ["arrow", "polars"])
def test_a_lean_arrow_read_matches_the_filtered_whole_table(tmp_path: Path, as_: str) -> None:
    pytest.importorskip("pyarrow")
    if as_ == "polars":
        pytest.importorskip("polars")
    write_home(
        tmp_path,
        [
            [("anchor", "phase/plan", "2026-01-01"), ("message", "x", "2026-02-11"), ("run", "x", "2026-02-12")],
            [("notebook", "nb", "2026-01-01"), ("message", "y", None), ("anchor", "phase/build", "2026-03-01")],
        ],
    )
    whole = read_tapes(tmp_path, as_="arrow").to_pandas()
    lean = read_tapes(tmp_path, as_=as_, kinds=["message"], since="2026-02-10")
    lean = lean.to_pandas() if as_ == "arrow" else lean.to_arrow().to_pandas()
    expected = whole[(whole["kind"] == "message") & (whole["date"] >= pd.Timestamp("2026-02-10", tz="UTC"))]
    assert lean[["tape_name", "id", "phase", "phase_id", "notebook"]].astype(str).values.tolist() == (
        expected[["tape_name", "id", "phase", "phase_id", "notebook"]].astype(str).values.tolist()
    )
