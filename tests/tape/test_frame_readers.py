"""The native reader and the plain one give the same table and frame, column by column: on generated homes (Bub's
and bub_nb's shapes, forks, resets, retractions, agents, torn lines, bad bytes, odd dates) and on a tape of
hostile lines."""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from harness.homes import write_home
from harness.hostile_lines import HOSTILE, MISREAD, tape_lines
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_frame_oracle import TAPE

from bub_nb.tape import open_tape, read_tapes
from bub_nb.tape.frames.arrow import loads
from bub_nb.tape.frames.native import current_reader, reader

pytest.importorskip("duckdb")

JSON_COLUMNS = ("payload", "meta")


def hostile_tape(folder: Path) -> Path:
    """Good lines with every hostile line between them, a 10 MB line, nesting past any limit, a retraction, a fork
    copy, older timestamped lines, and a torn last line."""
    good = [
        json.dumps(
            {"id": number, "kind": "message", "payload": {"role": "user", "content": f"hi {number}"}, "meta": {},
             "date": "2026-01-01T00:00:00+00:00"}
        ).encode()
        for number in range(1, 60)
    ]  # fmt: skip
    lines = []
    for number, line in enumerate(HOSTILE + MISREAD):
        lines += [good[number], line]
    dated = b',"meta":{},"date":"2026-01-01T00:00:00+00:00"}'
    lines += [line[:-1] + dated for line in HOSTILE if line.endswith(b"}}")]  # each also with every field
    lines += [
        json.dumps({"id": 70, "kind": "message", "payload": {"role": "user", "content": "x" * 10_000_000}}).encode(),
        b'{"id":71,"kind":"message","payload":{"c":' + b"[" * 3000 + b"]" * 3000 + b"}}",
        b'{"id":72,"kind":"anchor","payload":{"name":"phase/a","state":{"k":1}},"meta":{},"date":"2026-01-02T00:00:00Z"}',
        b'{"id":73,"kind":"event","payload":{"name":"retract","data":{"ids":[[1,2]]}},"meta":{},"date":"2026-01-02"}',
        b'{"id":74,"kind":"message","payload":{"role":"user","content":"c"},"meta":{"forked_from":"tape://a/3"},'
        b'"date":"2026-01-02T00:00:00.5+02:00"}',
        b'{"id":75,"kind":"message","payload":{"role":"user","content":"t"},"timestamp":1767225600.25}',
        b'{"id":76,"kind":"event","payload":{"name":"run","data":{"usage":{"prompt_tokens":5,"completion_tokens":2}}},'
        b'"meta":{"run_id":"r1"},"date":"2026-01-02T00:00:00+00:00"}',
        b'{"id":77,"kind":"tool_result","payload":{"results":["a","",'
        b'"b"]},"meta":{},"date":"2026-01-02T00:00:00+00:00"}',
        b'{"id":78,"kind":"message","payload":{"role":"user","content":"torn',
    ]
    path = folder / "tapes" / "hostile.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\n".join(lines))
    return path


def readable(value: Any) -> Any:
    """A JSON column's value as its value (the readers may space or escape the same value's text differently)."""
    return loads(value) if isinstance(value, str) else value


def same_tables(native: Any, pure: Any) -> None:
    assert native.column_names == pure.column_names
    for column in pure.column_names:
        left, right = native.column(column), pure.column(column)
        assert left.type == right.type, column
        if column in JSON_COLUMNS:
            assert [readable(v) for v in left.to_pylist()] == [readable(v) for v in right.to_pylist()], column
        else:
            assert left.to_pylist() == right.to_pylist(), column


def same_frames(native: pd.DataFrame, pure: pd.DataFrame) -> None:
    assert list(native.columns) == list(pure.columns)
    for column in pure.columns:
        assert native[column].dtype == pure[column].dtype, column
        if column in JSON_COLUMNS:
            assert native[column].tolist() == pure[column].tolist(), column
        else:
            pd.testing.assert_series_equal(native[column], pure[column], obj=column)


def both(read: Any) -> tuple[Any, Any]:
    with reader("native"):
        assert current_reader() == "native"
        native = read()
    with reader("pure"):
        pure = read()
    return native, pure


def test_the_readers_agree_on_a_tape_of_hostile_lines(tmp_path: Path) -> None:
    path = hostile_tape(tmp_path)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)  # comparing values nested 3,000 deep
    try:
        same_tables(*both(lambda: open_tape(path).to_arrow()))
        native, pure = both(lambda: open_tape(path).to_frame())
        same_frames(native, pure)
    finally:
        sys.setrecursionlimit(limit)
    assert pure["bad_bytes"].sum() == 4  # two lines, twice; a surrogate written as UTF-8 is read, as Python does
    assert pure["retracted"].sum() == 2
    assert pure["content"].str.len().max() == 10_000_000
    assert pure.loc[pure["id"] == 76, "prompt_tokens"].tolist() == [5]
    assert 78 not in pure["id"].tolist()  # the torn last line is set aside


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tapes=st.lists(TAPE, min_size=1, max_size=4))
def test_the_readers_agree_on_generated_homes(tapes: list[dict[str, Any]], tmp_path_factory: Any) -> None:
    home = tmp_path_factory.mktemp("home")
    write_home(home, tapes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # read_tapes warns of the bad bytes a home holds, on each reader
        same_tables(*both(lambda: read_tapes(home, as_="arrow")))
        same_frames(*both(lambda: read_tapes(home)))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=tape_lines())
def test_the_readers_agree_on_generated_lines(lines: list[bytes], tmp_path_factory: Any) -> None:
    path = tmp_path_factory.mktemp("lines") / "t.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    native, pure = both(lambda: open_tape(path).to_arrow())
    same_tables(native, pure)
    same_frames(*both(lambda: open_tape(path).to_frame()))


def test_the_environment_picks_the_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BUB_NB_READER", "native")
    assert current_reader() == "native"
    monkeypatch.setenv("BUB_NB_READER", "pure")
    assert current_reader() == "pure"
    monkeypatch.setenv("BUB_NB_READER", "auto")  # the plain reader until the native one measures faster
    assert current_reader() == "pure"
