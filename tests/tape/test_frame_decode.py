"""Frames at scale: lines decoded straight into columns hold exactly what decoding every line gives."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pandas as pd
import pytest
from harness.hostile_lines import HOSTILE, tape_lines
from hypothesis import given, settings
from hypothesis import strategies as st

from bub_nb.tape import FileTapeStore, open_tape
from bub_nb.tape._lines import decode_record, line_blocks
from bub_nb.tape.events import payload_event_usage
from bub_nb.tape.frames import columns as frame_columns
from bub_nb.tape.frames.columns import kind_column, text_column
from bub_nb.tape.stores.columns import Columns, decode_columns, text_columns, token_count
from bub_nb.tape.text import payload_call_names, payload_role, payload_text

ENTRY = b'{"id":%d,"kind":"message","payload":{"role":"user","content":"hi"},"meta":{},"date":"2026-01-01"}'


def plain_columns(lines: list[bytes], start: int) -> Columns:
    """The columns as decoding every line with ``decode_record`` gives them."""
    records = [record for record in map(read_line, lines) if record is not None and record["id"] >= start]
    return Columns.from_records(records)


def read_line(line: bytes) -> dict[str, Any] | None:
    """A line as a frame reads it: decoded, or else, when bytes in it are not UTF-8, decoded with U+FFFD for them."""
    record = decode_record(line)
    if record is None:
        try:
            line.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            return decode_record(line.decode("utf-8", "replace").encode("utf-8", "surrogatepass"))
    return record


def shape(value: Any) -> list[tuple[str, Any]]:
    """Every value inside ``value`` with its type, in order: a float is told from an equal int, and NaN and -0.0
    are kept apart, as ``==`` would not (walked without recursion: a payload may nest hundreds deep)."""
    out: list[tuple[str, Any]] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            out.append(("dict", tuple(item)))
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            out.append(("list", len(item)))
            stack.extend(reversed(item))
        else:
            out.append((type(item).__name__, repr(item)))
    return out


def assert_same(fast: Columns, plain: Columns) -> None:
    assert (fast.ids, fast.kinds, fast.dates) == (plain.ids, plain.kinds, plain.dates)
    assert shape(fast.payloads) == shape(plain.payloads) and shape(fast.metas) == shape(plain.metas)


@settings(max_examples=200, deadline=None)
@given(lines=tape_lines(), start=st.integers(-5, 5))
def test_decoded_columns_hold_exactly_what_decoding_every_line_does(lines: list[bytes], start: int) -> None:
    assert_same(decode_columns(lines, start), plain_columns(lines, start))


numbers = st.one_of(
    st.integers(),
    st.integers(min_value=2**63 - 2, max_value=2**70),
    st.integers(max_value=-(2**63) + 2, min_value=-(2**70)),
    st.floats(allow_nan=False, allow_infinity=False),
)


@settings(max_examples=300, deadline=None)
@given(
    data=st.lists(st.sampled_from([b"a", b"bc", b"\n", b"\n\n", b"{}", b"x" * 40]), max_size=30).map(b"".join),
    block=st.integers(1, 16),
    first=st.one_of(st.none(), st.integers(1, 4)),
    size=st.one_of(st.none(), st.integers(0, 200)),
)
def test_lines_read_a_block_at_a_time_are_the_complete_lines_of_the_bytes_read(
    data: bytes, block: int, first: int | None, size: int | None
) -> None:
    size = len(data) if size is None else size
    read = data[:size]
    complete = read[: read.rfind(b"\n") + 1]  # the unfinished last line is left out
    expected = complete.split(b"\n")[:-1]
    blocks = list(line_blocks(io.BytesIO(data), size, block, first=first))
    assert [line for lines in blocks for line in lines] == expected
    assert all(blocks)  # a block that ends no line yields nothing rather than an empty list


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=False), st.text(max_size=4)),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["usage", "name", "x"]), inner, max_size=3)
    ),
    max_leaves=6,
)
empty_values = st.sampled_from([None, {}, [], 0, "", False])
usage_data = st.fixed_dictionaries(
    {"usage": st.dictionaries(st.sampled_from(["prompt_tokens", "completion_tokens"]), st.integers(0, 9) | json_values)}
)
calls = st.lists(
    st.fixed_dictionaries({"function": st.dictionaries(st.sampled_from(["name", "arguments"]), json_values)})
)
payloads = st.fixed_dictionaries(
    {},
    optional={
        "name": st.sampled_from(["run", "summary", "handoff", "memory/zone", "", "user"]) | json_values,
        "data": empty_values | usage_data | json_values,
        "state": empty_values | json_values,
        "role": st.sampled_from(["user", "assistant", "tool"]) | json_values,
        "content": st.text(max_size=4) | empty_values | json_values,
        "tool_calls": calls | json_values,
        "calls": calls | json_values,
        "results": st.lists(st.text(max_size=3) | json_values, max_size=3) | json_values,
        "kind": json_values,
        "message": json_values,
    },
)


@settings(max_examples=300, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.sampled_from(["message", "event", "anchor", "system", "tool_call", "tool_result", "error", "x"]),
            payloads,
        ),
        max_size=12,
    )
)
def test_the_readable_columns_follow_the_text_rules_for_any_payload(rows: list[tuple[str, dict[str, Any]]]) -> None:
    kinds, bodies = [kind for kind, _ in rows], [body for _, body in rows]
    text = text_columns(kinds, bodies)
    for row, (kind, payload) in enumerate(rows):
        calls = payload_call_names(kind, payload) if kind in ("message", "tool_call") else []
        own = payload.get("name") if kind in ("anchor", "event", "message") else None
        own = own if isinstance(own, str) else None
        assert text.roles[row] == payload_role(kind, payload)
        assert text.contents[row] == payload_text(kind, payload)
        assert text.tools[row] == calls
        assert text.names[row] == (own if own is not None else (calls[0] if len(calls) == 1 else None))
        usage = payload_event_usage(kind, payload) or {}
        assert text.prompt_tokens.get(row) == token_count(usage.get("prompt_tokens"))
        assert text.completion_tokens.get(row) == token_count(usage.get("completion_tokens"))


@settings(max_examples=200, deadline=None)
@given(values=st.lists(numbers, max_size=5), entry_id=st.one_of(st.integers(1, 9), st.integers(2**63 - 2, 2**65)))
def test_numbers_of_any_size_in_a_clean_block_are_read_exactly(values: list[int | float], entry_id: int) -> None:
    record = {"id": entry_id, "kind": "event", "payload": {"values": values}, "meta": {"n": values}, "date": "d"}
    lines = [ENTRY % 1, json.dumps(record).encode(), ENTRY % 3]
    assert_same(decode_columns(lines), plain_columns(lines, 1))


def test_a_line_holding_two_entries_is_no_entry_even_beside_one_split_over_two_lines() -> None:
    lines = [b'{"id":1,"kind":"message"', b'"payload":{},"meta":{},"date":"d"}', ENTRY % 2 + b"," + ENTRY % 3]
    assert len(decode_columns(lines)) == 0 == len(plain_columns(lines, 1))


def test_each_hostile_line_among_clean_ones_is_framed_as_decoding_reads_it() -> None:
    for line in HOSTILE:
        lines = [ENTRY % 1, line, ENTRY % 8]
        assert_same(decode_columns(lines), plain_columns(lines, 1))


@pytest.mark.parametrize("start", [1, 1500])
def test_hostile_lines_far_into_a_long_block_are_framed_as_decoding_reads_them(start: int) -> None:
    lines = [ENTRY % number for number in range(1, 4001)]
    lines[1030], lines[2100], lines[3999] = HOSTILE[0], HOSTILE[6], HOSTILE[-1]
    lines[2500] = ENTRY % 5  # an id below ``start`` among later ones
    fast, plain = decode_columns(lines, start), plain_columns(lines, start)
    assert_same(fast, plain)
    assert len(fast) > 2000


def test_a_negative_integer_just_below_64_bits_is_read_exactly() -> None:
    line = b'{"id":1,"kind":"event","payload":{"n":-9223372036854775809},"meta":{},"date":"d"}'
    record = decode_record(line)
    assert record is not None and record["payload"]["n"] == -(2**63) - 1
    assert decode_columns([line]).payloads == [{"n": -(2**63) - 1}]


TEXT_COLUMNS = ("role", "name", "content", "phase", "run_id")


# pandas keeps a ``str`` column's values in Python strings, or in Arrow when pyarrow is installed (its default
# then); both are built here, in Arrow chunks of a few rows so that a column spans several
STORAGES = ["python", "pyarrow"]


@contextlib.contextmanager
def string_storage(storage: str) -> Iterator[None]:
    with pd.option_context("mode.string_storage", storage), mock.patch.object(frame_columns, "_ARROW_ROWS", 3):
        yield


@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize(
    "metas",
    [[{}, {}], [{"run_id": "r1"}, {}], [{"run_id": 7}, {"run_id": "r2"}], [{"run_id": {"x": 1}}, {}]],
    ids=["no run ids", "str and missing", "int and str", "object"],
)
def test_text_columns_take_the_dtype_pandas_infers_from_their_values(
    tmp_path: Path, metas: list[Any], storage: str
) -> None:
    """...and ``str`` when every value is missing, as in a frame where some are not: one dtype in every frame."""
    tape = open_tape("t", store=FileTapeStore(tmp_path))
    tape.handoff("phase/a")
    for _ in range(3):
        tape.append_message({"role": "user", "content": "hi"}, **metas[0])
        tape.append_event("run", {"usage": {}}, **metas[1])
    with string_storage(storage):
        frame = tape.to_frame()
        for column in TEXT_COLUMNS:
            values = frame[column].tolist()
            missing = all(pd.isna(value) for value in values)
            expected = pd.Series(values, name=column, dtype=pd.StringDtype(na_value=np.nan) if missing else None)
            pd.testing.assert_series_equal(frame[column], expected)
    if frame["content"].dtype != object:
        assert frame["content"].dtype.storage == storage


@pytest.mark.parametrize("storage", STORAGES)
def test_a_lone_surrogate_in_a_text_column_keeps_the_frame_readable(tmp_path: Path, storage: str) -> None:
    tape = open_tape("t", store=FileTapeStore(tmp_path))
    tape.append_message({"role": "user", "content": "half a pair \udc00"})
    tape.append_message({"role": "user", "content": "whole"})
    with string_storage(storage):
        frame = tape.to_frame()
    assert frame["content"].tolist() == ["half a pair \udc00", "whole"]
    assert str(frame["content"].dtype) == "str" and frame["content"].str.contains("half").sum() == 1


@pytest.mark.parametrize("storage", STORAGES)
@settings(max_examples=150, deadline=None)
@given(values=st.lists(st.one_of(st.none(), st.text(max_size=3), st.sampled_from(["", "user"])), max_size=8))
def test_a_derived_text_column_takes_the_dtype_and_values_pandas_infers(values: list[str | None], storage: str) -> None:
    with string_storage(storage):
        built = text_column(list(values), text_or_none=True)
        text = pd.StringDtype(na_value=np.nan)
        expected = pd.Series(values, dtype=text if all(value is None for value in values) else None)
        pd.testing.assert_series_equal(pd.Series(built), expected)


@settings(max_examples=200, deadline=None)
@given(kinds=st.lists(st.one_of(st.sampled_from(["message", "event", "anchor", "tool_call"]), st.text(max_size=3))))
def test_the_kind_column_is_the_categorical_pandas_makes_of_the_kinds(kinds: list[str]) -> None:
    expected = pd.Series(kinds, dtype="category") if kinds else pd.Series(kinds, dtype="object")
    pd.testing.assert_series_equal(kind_column(list(kinds)), expected)
