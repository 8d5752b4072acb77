"""The frame's schema holds whatever the tapes hold: one dtype per column in every frame, missing and bad dates
alike, and one name for an anchor's state in every table of anchors."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from bub_nb import Agent
from bub_nb.tape import FileTapeStore, open_tape, read_tapes
from bub_nb.tape.reports.transcript import anchors_frame

pytestmark = pytest.mark.usefixtures("reader")  # every test on each reader (conftest.py)

TEXT = pd.StringDtype(na_value=float("nan"))


def bare_tape(folder: Path, name: str = "bare") -> None:
    """A tape as a plain writer leaves it: messages only, no anchor, run id, tool or notebook."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = [
        {"id": 1, "kind": "message", "payload": {"role": "user", "content": "hi"}, "meta": {}, "date": "2026-02-10"},
        {"id": 2, "kind": "event", "payload": {"name": "tick", "data": {}}, "meta": {}, "date": "2026-02-10T01:00Z"},
    ]
    (folder / f"{name}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))


def dtypes(frame: pd.DataFrame) -> dict[str, str]:
    return {column: str(dtype) for column, dtype in frame.dtypes.items() if column != "kind"}


def test_every_frame_of_a_home_has_the_dtypes_of_a_full_one(tmp_path: Path) -> None:
    full, bare, empty = tmp_path / "full", tmp_path / "bare", tmp_path / "empty"
    Agent(open_tape("lesson", home=full), "offline").run("What is a tape?")
    bare_tape(bare / "tapes")
    (empty / "tapes").mkdir(parents=True)
    expected = dtypes(read_tapes(full))
    assert expected["notebook"] == expected["agent"] == expected["phase"] == expected["run_id"] == "str"
    for home in (bare, empty):
        assert dtypes(read_tapes(home)) == expected, home.name
        assert dtypes(read_tapes(home, kinds=["anchor"])) == expected, home.name
    assert dtypes(open_tape("bare", store=FileTapeStore(bare / "tapes")).to_frame()) == {
        column: dtype for column, dtype in expected.items() if column not in ("notebook", "agent")
    }
    by_store = dtypes(read_tapes(store=FileTapeStore(full / "tapes")))
    assert dtypes(read_tapes(store=FileTapeStore(bare / "tapes"))) == by_store
    assert all(read_tapes(home)["kind"].dtype == "category" for home in (full, bare, empty))


def test_the_notebook_column_is_text_with_or_without_a_notebook(tmp_path: Path) -> None:
    tape = open_tape("with", home=tmp_path)
    tape.append_event("notebook", {"path": "/lessons/trip.ipynb"})
    open_tape("without", home=tmp_path).ensure_bootstrap_anchor()
    frame = read_tapes(tmp_path)
    assert frame["notebook"].dtype == TEXT
    notebooks = frame.groupby("tape_name")["notebook"].first()
    assert notebooks["with"] == "/lessons/trip.ipynb" and pd.isna(notebooks["without"])


@pytest.mark.parametrize(
    "dated",
    [{}, {"date": None}, {"date": "garbage"}, {"timestamp": "soon"}, {"timestamp": 1e300}, {"date": 17}],
    ids=["no date", "null", "garbled", "text timestamp", "absurd timestamp", "number"],
)
def test_a_missing_date_is_read_as_a_bad_one(tmp_path: Path, dated: dict[str, object]) -> None:
    folder = tmp_path / "tapes"
    folder.mkdir()
    good = {"id": 1, "kind": "message", "payload": {"role": "user", "content": "a"}, "meta": {}, "date": "2026-02-10"}
    odd = {"id": 2, "kind": "message", "payload": {"role": "user", "content": "b"}, "meta": {}, **dated}
    bad = {**good, "id": 3, "date": "garbage"}
    (folder / "t.jsonl").write_text("".join(json.dumps(line) + "\n" for line in (good, odd, bad)))
    tape = open_tape("t", store=FileTapeStore(folder))
    assert tape.to_frame()["date"].isna().tolist() == [False, True, True]
    assert read_tapes(tmp_path)["date"].isna().tolist() == [False, True, True]
    assert tape.read()[1].date == tape.read()[2].date or tape.read()[2].date == "garbage"
    with pytest.raises(ValueError):
        _ = tape.read()[1].when  # as for the garbled date: no moment to place it at
    assert [entry.id for entry in tape.query().between_dates("2000-01-01", None)] == [1]


def test_every_table_of_anchors_calls_the_state_state(tmp_path: Path) -> None:
    tape = open_tape("t", home=tmp_path)
    tape.ensure_bootstrap_anchor()
    tape.handoff("phase/plan", {"summary": "Plan the trip."})
    tape.append_event("note", {})
    expected = [anchor.state for anchor in tape.anchors(limit=None)]
    assert expected == [{"owner": "human"}, {"summary": "Plan the trip."}]
    assert anchors_frame(tape)["state"].tolist() == expected  # what %anchors shows
    table = tape.to_frame().tape.anchors()
    assert list(table.columns) == ["tape_name", "id", "date", "name", "state", "payload"]
    assert table["state"].tolist() == expected
    # ``payload``, the column this table had before ``state``, still holds the whole payload
    assert [payload["name"] for payload in table["payload"]] == ["session/start", "phase/plan"]
