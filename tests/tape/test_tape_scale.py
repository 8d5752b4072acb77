"""Tapes at scale: the fast paths (first-open scan, frames, search) give exactly what decoding every line gives."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import orjson
import pandas as pd
import pytest
from harness.hostile_lines import HOSTILE, MISREAD, tape_lines
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from bub_nb.errors import TapeError
from bub_nb.tape import FileTapeStore, TapeEntry, open_tape, read_tapes
from bub_nb.tape._lines import decode_record
from bub_nb.tape.stores._scan import scan_block
from bub_nb.tape.stores._tape_file import IndexState
from bub_nb.tape.stores.search import candidate_lines, needles
from bub_nb.tape.text import entry_text


def plain_index(data: bytes) -> IndexState:
    """The index as decoding every line builds it."""
    state = IndexState()
    state.add_lines(data[:-1].split(b"\n") if data else [], 0)
    return state


def scanned_index(path: Path) -> IndexState:
    state = IndexState()
    with path.open("rb") as handle:
        state.scan(handle, path.stat().st_size)
    return state


def assert_same_index(fast: IndexState, plain: IndexState, data: bytes) -> None:
    assert (fast.entries, fast.last_id, fast.bad_lines) == (plain.entries, plain.last_id, plain.bad_lines)
    assert (fast.anchor_ids, fast.anchor_offsets, fast.anchor_names) == (
        plain.anchor_ids,
        plain.anchor_offsets,
        plain.anchor_names,
    )
    for entry_id, offset in zip(fast.mark_ids, fast.mark_offsets, strict=True):  # a mark is a line's own id
        record = decode_record(data[offset : data.index(b"\n", offset)])
        assert record is not None and record["id"] == entry_id


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=tape_lines())
@example(
    lines=[
        b'{"id":1,"kind":"anchor","payload":{"name":"a"}}',
        MISREAD[0],
        b'{"id":10,"kind":"event","payload":{}}',
    ]
)
def test_the_first_open_scan_indexes_exactly_what_decoding_every_line_does(
    tmp_path_factory: pytest.TempPathFactory, lines: list[bytes]
) -> None:
    path = tmp_path_factory.mktemp("scan") / "t.jsonl"
    data = b"".join(line + b"\n" for line in lines)
    path.write_bytes(data)
    assert_same_index(scanned_index(path), plain_index(data), data)


def test_the_fast_scan_takes_clean_tapes_of_both_spellings_and_only_real_anchors(tmp_path: Path) -> None:
    lines = [
        b'{"id": 1, "kind": "anchor", "payload": {"name": "session/start"}, "meta": {}, "date": "d"}',
        b'{"id":2,"kind":"message","payload":{"content":"\\"kind\\": \\"anchor\\""},"meta":{},"date":"d"}',
        b'{"id":3,"kind":"event","payload":{"name":"x","data":{"kind":"anchor"}},"meta":{},"date":"d"}',
        b'{"id":4,"kind":"anchor","payload":{"name":"phase/1"},"meta":{},"date":"d"}',
    ]
    data = b"".join(line + b"\n" for line in lines)
    found = scan_block(data, len(data), -1024, 1024)
    assert found is not None  # no fallback: the fast path itself told anchors from mentions
    assert [(entry_id, name) for entry_id, _, name in found.anchors] == [(1, "session/start"), (4, "phase/1")]
    assert found.entries == 4 and found.last_id == 4
    path = tmp_path / "t.jsonl"
    path.write_bytes(data)
    assert_same_index(scanned_index(path), plain_index(data), data)


@pytest.mark.parametrize("line", HOSTILE + MISREAD, ids=range(len(HOSTILE + MISREAD)))
def test_each_hostile_line_among_clean_ones_is_indexed_as_decoding_reads_it(tmp_path: Path, line: bytes) -> None:
    # The entries after it come after any id a hostile line may hold, so the tape's ids still increase.
    clean = [
        orjson.dumps({"id": n, "kind": "anchor" if n % 3 == 0 else "message", "payload": {"name": f"a{n}"}})
        for n in (*range(1, 6), *range(10, 14))
    ]
    data = b"".join(row + b"\n" for row in [*clean[:5], line, *clean[5:]])
    path = tmp_path / "t.jsonl"
    path.write_bytes(data)
    assert_same_index(scanned_index(path), plain_index(data), data)
    tape = open_tape(path, store=FileTapeStore(tmp_path))
    ids = [record["id"] for record in map(decode_record, data[:-1].split(b"\n")) if record is not None]
    if any(later <= earlier for earlier, later in itertools.pairwise(ids)):  # an id that goes back is never served
        with pytest.raises(TapeError, match="out of order"):
            tape.anchors(limit=None)
        return
    assert [a.name for a in tape.anchors(limit=None)] == plain_index(data).anchor_names


@pytest.mark.parametrize("lines", MISREAD, ids=range(len(MISREAD)))
def test_frames_and_search_read_two_entries_on_a_line_or_one_over_two_lines_as_decoding_does(
    tmp_path: Path, lines: bytes
) -> None:
    clean = [orjson.dumps({"id": n, "kind": "anchor", "payload": {"name": f"glued split {n}"}}) for n in (1, 2, 20)]
    data = b"".join(row + b"\n" for row in [*clean[:2], lines, clean[2]])
    (tmp_path / "t.jsonl").write_bytes(data)
    tape = open_tape("t", store=FileTapeStore(tmp_path))
    plain = [record["id"] for record in map(decode_record, data[:-1].split(b"\n")) if record is not None]
    assert plain == [1, 2, 20]
    assert tape.to_frame()["id"].tolist() == plain
    for query in ("glued", "split", "message"):
        found = [e.id for e in tape.iter_reverse() if query in entry_text(e).lower()]
        assert [e.id for e in tape.search(query, limit=100)] == found
    assert [e.id for e in tape.search("glued", limit=100)] == [20, 2, 1]


# -- search: a byte prefilter, then the same check as before -----------------------------------------------------

SPELLINGS = [  # lines whose text spells some words differently from their bytes
    b'{"id": 1, "kind": "event", "payload": {"name": "n", "data": {"x": 1E2, "y": NaN, "z": null}}}',
    b'{"id": 1, "kind": "message", "payload": {"role": "user", "content": "\\u0041BC caf\\u00e9 \\u212a"}}',
    b'{"id": 1, "kind": "message", "payload": {"role": "user", "content": "\xc4\xb0stanbul \xe2\x84\xaaelvin"}}',
    b'{"id": 1, "kind": "tool_call", "payload": {"calls": [{"function": {"name": "f", "arguments": {"a": null}}}]}}',
    b'{"id": 1, "kind": "tool_call", "payload": {"calls": [{"function": {"name":"g", "arguments": {"b":"\\u007f"}}}]}}',
    b'{"id": 1, "kind": "error", "payload": {"kind": 5, "message": 1.0e-7}}',
    b'{"id": 1, "kind": "anchor", "payload": {"name": "phase/x", "state": {"k": [1e16, true, Infinity]}}}',
]
words = st.text(alphabet=st.sampled_from("abcxyzABCİK019 .:-_é\n"), max_size=10)
contents = st.one_of(words, st.integers(), st.floats(allow_nan=True), st.none(), st.lists(words, max_size=2))


@st.composite
def searched_tape(draw: st.DrawFn) -> tuple[list[bytes], str]:
    lines = []
    for number in range(1, draw(st.integers(1, 12)) + 1):
        if draw(st.booleans()):
            line = draw(st.sampled_from(SPELLINGS)).replace(b'"id": 1', b'"id": %d' % number, 1)
        else:
            kind = draw(st.sampled_from(["message", "event", "tool_result", "anchor", "error", "system"]))
            payload = {"role": "user", "content": draw(contents), "name": draw(words), "data": draw(contents)}
            payload["results"] = [draw(contents)]
            payload["message"] = draw(contents)
            record = {"id": number, "kind": kind, "payload": payload, "meta": {}, "date": "2026-01-01T00:00:00Z"}
            line = json.dumps(record, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass")
        lines.append(line)
    query = draw(st.one_of(words, st.sampled_from(["abc", "100", "none", "null", "kelvin", "i", "k", "x7f", "1e-07"])))
    return lines, query


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=searched_tape())
def test_search_finds_exactly_what_decoding_every_line_finds(
    tmp_path_factory: pytest.TempPathFactory, case: tuple[list[bytes], str]
) -> None:
    lines, query = case
    folder = tmp_path_factory.mktemp("search")
    (folder / "t.jsonl").write_bytes(b"".join(line + b"\n" for line in lines))
    tape = open_tape("t", store=FileTapeStore(folder))
    plain = [e.id for e in tape.iter_reverse() if query.lower() in entry_text(e).lower()]
    assert [e.id for e in tape.search(query, limit=100)] == plain


def test_search_decodes_only_lines_that_hold_the_words(tmp_path: Path) -> None:
    tape = open_tape("t", store=FileTapeStore(tmp_path))
    tape.extend([TapeEntry.message({"role": "user", "content": f"note {n}"}) for n in range(200)])
    tape.append_message({"role": "user", "content": "the Rare word"})
    tape.append_event("run", {"note": "a rare event"})
    words = needles("RARE")
    assert words == [b"rare"]
    data = tape.path.read_bytes()
    assert len(candidate_lines(data, words)) == 2
    assert [e.kind for e in tape.search("rare")] == ["event", "message"]


# -- frames of many tapes ------------------------------------------------------------------------------------------


def test_read_tapes_frames_every_tape_as_its_own_to_frame_does(tmp_path: Path) -> None:
    store = FileTapeStore(tmp_path / "tapes")
    first, second = open_tape("a", store=store), open_tape("b", store=store)
    first.handoff("phase/a")
    first.append_message({"role": "user", "content": "in a"})
    second.append_message({"role": "user", "content": "before any anchor in b"})  # must not fall under phase/a
    second.append_tool_result(["done"])
    second.handoff("phase/b")
    frame = read_tapes(tmp_path)
    assert str(frame["kind"].dtype) == "category"
    for name, tape in (("a", first), ("b", second)):
        own = frame[frame["tape_name"] == name].drop(columns=["notebook", "agent"]).reset_index(drop=True)
        alone = tape.to_frame()
        pd.testing.assert_frame_equal(own, alone, check_categorical=False)
    assert frame[frame["tape_name"] == "b"]["phase"].isna().tolist() == [True, True, False, False]


def test_a_frame_leaves_out_an_unfinished_last_line(tmp_path: Path) -> None:
    tape = open_tape("t", store=FileTapeStore(tmp_path))
    tape.append_message({"role": "user", "content": "whole"})
    with tape.path.open("ab") as handle:
        handle.write(b'{"id": 2, "kind": "message", "payload": {}')
    assert tape.to_frame()["id"].tolist() == [1] == [e.id for e in tape.read()]
