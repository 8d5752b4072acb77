"""Frames over several tapes, and frame helpers that answer as the Tape API does."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from harness.tapes import bub_append

from bub_nb.errors import AnchorNotFoundError, TapeError
from bub_nb.tape import Tape, TapeEntry, open_tape, read_tapes

pytestmark = pytest.mark.usefixtures("reader")  # every test on each reader (conftest.py)


def lesson(tape: Tape, *anchors: str) -> None:
    tape.ensure_bootstrap_anchor()
    for name in anchors:
        tape.append_message({"role": "user", "content": f"before {name} on {tape.name}"})
        tape.handoff(name, {"summary": name})
    tape.append_message({"role": "user", "content": f"last words on {tape.name}"})


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "bub"
    lesson(open_tape("early", home=home), "phase/x", "phase/y")
    # "late" is longer before its phase/x, so its ids pass early's anchor ids
    late = open_tape("late", home=home)
    for n in range(6):
        late.append_message({"role": "user", "content": f"warm-up {n}"})
    lesson(late, "phase/x")
    lesson(open_tape("other", home=home), "phase/z")
    return home


def ids_of(frame: pd.DataFrame, tape: str) -> list[int]:
    return frame[frame["tape_name"] == tape]["id"].tolist()


def test_after_resolves_the_anchor_inside_each_tape(home: Path) -> None:
    frame = read_tapes(home)
    after = frame.tape.after("phase/x")
    for name in ("early", "late"):
        assert ids_of(after, name) == [e.id for e in open_tape(name, home=home).after_anchor("phase/x")]
    assert ids_of(after, "other") == []  # it never had phase/x


def test_between_phase_and_summary_work_per_tape(home: Path) -> None:
    frame = read_tapes(home)
    between = frame.tape.between("phase/x", "phase/y")
    assert set(between["tape_name"]) == {"early"}
    assert between["id"].tolist() == [e.id for e in open_tape("early", home=home).between_anchors("phase/x", "phase/y")]
    phase = frame.tape.phase("phase/x")
    assert set(phase["tape_name"]) == {"early", "late"}
    counts = frame.tape.summary()
    assert counts.loc[("other", "phase/z"), "message"] == 1
    anchors = frame.tape.anchors()
    assert anchors.columns[0] == "tape_name" and (anchors["tape_name"] == "other").sum() == 2


def test_the_tape_name_column_is_not_hidden_by_the_accessor(home: Path) -> None:
    frame = read_tapes(home)
    assert frame["tape_name"].str.startswith("ea").sum() == len(open_tape("early", home=home))
    assert frame.tape_name.nunique() == 3


def test_to_messages_refuses_a_mix_of_tapes(home: Path) -> None:
    with pytest.raises(TapeError, match="several: early, late, other"):
        read_tapes(home).tape.to_messages()


def test_frame_helpers_raise_what_the_tape_api_raises(home: Path) -> None:
    tape = open_tape("early", home=home)
    frame = tape.to_frame()
    with pytest.raises(AnchorNotFoundError) as api:
        tape.find_anchor("nosuch")
    with pytest.raises(AnchorNotFoundError) as helper:
        frame.tape.phase("nosuch")
    assert str(helper.value) == str(api.value)
    with pytest.raises(TapeError) as api_kind:
        tape.query().kinds("bogus")
    with pytest.raises(TapeError) as helper_kind:
        frame.tape.kinds("bogus")
    assert str(helper_kind.value) == str(api_kind.value)
    with pytest.raises(TapeError) as api_order:
        tape.between_anchors("phase/y", "phase/x")
    with pytest.raises(TapeError) as helper_order:
        frame.tape.between("phase/y", "phase/x")
    assert str(helper_order.value) == str(api_order.value)
    with pytest.raises(AnchorNotFoundError, match="'phase/z'"):
        read_tapes(home).tape.between("phase/x", "phase/z")  # no tape holds both


def test_to_messages_follows_the_tape_order_whatever_the_row_order(home: Path) -> None:
    tape = open_tape("early", home=home)
    frame = tape.to_frame()
    shuffled = frame.sample(frac=1, random_state=3)
    assert shuffled["id"].tolist() != frame["id"].tolist()
    assert shuffled.tape.to_messages() == frame.tape.to_messages() == tape.view(None).to_messages()


def test_read_tapes_of_a_missing_home_raises(tmp_path: Path) -> None:
    with pytest.raises(TapeError, match="no/such/folder"):
        read_tapes(tmp_path / "no" / "such" / "folder")


def test_kind_is_categorical_in_read_tapes_as_in_to_frame(home: Path) -> None:
    assert isinstance(open_tape("early", home=home).to_frame()["kind"].dtype, pd.CategoricalDtype)
    assert isinstance(read_tapes(home)["kind"].dtype, pd.CategoricalDtype)
    (home / "empty").mkdir()
    assert isinstance(read_tapes(home / "empty")["kind"].dtype, pd.CategoricalDtype)


def test_read_tapes_adds_archives_when_asked(home: Path) -> None:
    tape = open_tape("early", home=home)
    before = len(tape)
    archived = tape.reset(archive=True)[0].payload["state"]["archived"]
    bub_append(Path(tape.path), [TapeEntry.message({"role": "user", "content": "a new start"})])  # type: ignore[arg-type]
    plain = read_tapes(home)
    assert "archived" not in plain.columns and Path(archived).name not in set(plain["tape_name"])
    frame = read_tapes(home, include_archives=True)
    rows = frame[frame["tape_name"] == "early"]  # an archive's rows are named by the tape it belongs to
    assert len(rows[rows["archived"]]) == before
    assert len(rows[~rows["archived"]]) == len(plain[plain["tape_name"] == "early"])
