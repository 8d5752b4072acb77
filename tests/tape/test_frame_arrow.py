"""Tapes as Arrow tables, Parquet and CSV: the columns of to_frame(), exactly the entries the Tape API reads."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from harness.hostile_lines import tape_lines
from hypothesis import given, settings
from hypothesis import strategies as st

from bub_nb.errors import TapeError
from bub_nb.tape import FileTapeStore, open_tape, read_tapes
from bub_nb.tape.frames.arrow import dumps
from bub_nb.tape.frames.saved import arrow_to_frame, read_frame

pytestmark = pytest.mark.usefixtures("reader")  # every test on each reader (conftest.py)

EXACT = ["tape_name", "id", "kind", "phase_id", "forked_from", "prompt_tokens", "completion_tokens"]
TEXT = ["role", "name", "content", "phase", "run_id"]


def readable(value: object) -> object:
    """A text value as Arrow holds it: UTF-8, a lone surrogate replaced."""
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return None if value is None or value != value else value


def same_entries(table_frame: pd.DataFrame, frame: pd.DataFrame) -> None:
    assert list(table_frame.columns) == list(frame.columns)
    pd.testing.assert_frame_equal(table_frame[EXACT], frame[EXACT], check_dtype=False, check_categorical=False)
    for column in ("payload", "meta"):  # as JSON text, so that NaN equals NaN
        assert list(map(dumps, table_frame[column])) == list(map(dumps, frame[column]))
    assert table_frame["tools"].tolist() == frame["tools"].tolist()
    assert table_frame["date"].tolist() == frame["date"].tolist() or (
        table_frame["date"].isna().tolist() == frame["date"].isna().tolist()
    )
    for column in TEXT:
        assert [readable(v) for v in table_frame[column].tolist()] == [readable(v) for v in frame[column].tolist()]


def test_to_arrow_has_the_columns_and_entries_of_to_frame(example_home: Path) -> None:
    store = FileTapeStore(example_home / "tapes")
    for name in store.list_tapes():
        tape = open_tape(name, store=store)
        table = tape.to_arrow()
        assert table.column_names == list(tape.to_frame().columns)
        assert str(table.schema.field("payload").type) == "large_string"  # JSON text
        same_entries(arrow_to_frame(table), tape.to_frame())


@settings(max_examples=40, deadline=None)
@given(lines=tape_lines(), torn=st.booleans())
def test_to_arrow_reads_exactly_what_the_plain_decode_reads(
    tmp_path_factory: pytest.TempPathFactory, lines: list[bytes], torn: bool
) -> None:
    folder = tmp_path_factory.mktemp("arrow")
    body = b"".join(line + b"\n" for line in lines)
    if torn:
        body += b'{"id": 999, "kind": "message", "payl'  # a writer stopped mid-line: no entry yet
    (folder / "t.jsonl").write_bytes(body)
    tape = open_tape("t", store=FileTapeStore(folder))
    same_entries(arrow_to_frame(tape.to_arrow()), tape.to_frame())


def test_read_tapes_as_arrow_and_polars_match_the_frame(example_home: Path) -> None:
    frame = read_tapes(example_home)
    table = read_tapes(example_home, as_="arrow")
    same_entries(arrow_to_frame(table), frame)
    assert table.column_names == list(frame.columns)
    polars = read_tapes(example_home, as_="polars", kinds=["message"], columns=["tape_name", "content"])
    lean = read_tapes(example_home, kinds=["message"], columns=["tape_name", "content"])
    assert polars.columns == list(lean.columns) and polars["content"].to_list() == lean["content"].tolist()
    with pytest.raises(TapeError, match="as_"):
        read_tapes(example_home, as_="spark")


def test_a_frame_saves_to_parquet_and_csv_and_reads_back_whole(tmp_path: Path, example_home: Path) -> None:
    frame = read_tapes(example_home)
    for saved in (tmp_path / "f.parquet", tmp_path / "f.csv"):
        getattr(frame.tape, f"to_{saved.suffix[1:]}")(saved)
        back = read_frame(saved)
        pd.testing.assert_frame_equal(back, frame, check_categorical=False)
        pd.testing.assert_frame_equal(back.tape.runs(), frame.tape.runs())
        pd.testing.assert_frame_equal(back.tape.usage(by="phase"), frame.tape.usage(by="phase"))


def test_read_tapes_leaner_reads_keep_the_phase_of_the_whole_tape(example_home: Path) -> None:
    frame = read_tapes(example_home)
    since = read_tapes(example_home, kinds=["message"], since="2026-02-10", columns=["tape_name", "id", "phase"])
    expected = frame[(frame["kind"] == "message") & (frame["date"] >= pd.Timestamp("2026-02-10", tz="UTC"))]
    assert since.columns.tolist() == ["tape_name", "id", "phase"]
    assert since["id"].tolist() == expected["id"].tolist() and since["phase"].tolist() == expected["phase"].tolist()


def test_the_command_line_exports_every_tape_as_parquet(tmp_path: Path, example_home: Path) -> None:
    out = tmp_path / "parquet"
    done = subprocess.run(
        [sys.executable, "-m", "bub_nb.cli", "tapes", "export", "--parquet", str(out), "--home", str(example_home)],
        capture_output=True,
        text=True,
        check=True,
    )
    files = sorted(out.glob("*.parquet"))
    assert len(files) == 2 and done.stdout.split() == [str(path) for path in files]
    table = pq.read_table(files[0])
    tape = open_tape(files[0].stem, store=FileTapeStore(example_home / "tapes"))
    *exported, recorded = tape.read()  # the export is recorded after what it wrote, with the file's path
    assert recorded.name == "export" and recorded.payload["data"] == {"path": str(files[0]), "format": "parquet"}
    same_entries(arrow_to_frame(table), tape.to_frame().iloc[: len(exported)])


def test_pandas_own_parquet_methods_round_trip_a_frame_the_helpers_accept(tmp_path: Path, example_home: Path) -> None:
    frame = read_tapes(example_home)
    frame.to_parquet(tmp_path / "frame.parquet")  # pandas' own method, not df.tape.to_parquet
    back = pd.read_parquet(tmp_path / "frame.parquet")
    for column in ("payload", "meta"):
        assert str(back[column].dtype) == "tape_json" and back[column].tolist() == frame[column].tolist()
    pd.testing.assert_frame_equal(back.tape.usage(by="tape_name"), frame.tape.usage(by="tape_name"))
    pd.testing.assert_frame_equal(back.tape.runs(), frame.tape.runs())
    calls, again = frame.tape.tool_calls(), back.tape.tool_calls()
    assert again["ok"].tolist() == calls["ok"].tolist() and again["result"].tolist() == calls["result"].tolist()
    first = frame["tape_name"].iloc[0]
    one, one_back = frame[frame["tape_name"] == first], back[back["tape_name"] == first]
    assert one_back.tape.to_messages() == one.tape.to_messages()
