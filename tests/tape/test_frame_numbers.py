"""Frames give right numbers: phases in query frames, phases that share a name, concatenated tapes, forks,
search limits."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bub_nb.errors import TapeError
from bub_nb.tape import FileTapeStore, Tape, TapeEntry, open_tape, read_tapes
from bub_nb.tape.frames import class_overview

pytestmark = pytest.mark.usefixtures("reader")  # every test on each reader (conftest.py)

LONG = "494727f0da168296__0898b22730d57afc"
TRIP = "4d379f4d08d1280e__b964cebb99de6241"


def example(home: Path, name: str) -> Tape:
    return open_tape(name, store=FileTapeStore(home / "tapes"))


def same_phases(part: pd.DataFrame, whole: pd.DataFrame) -> None:
    """Every row of ``part`` carries the phase, and phase instance, its entry has in the whole tape's frame."""
    expected = whole.set_index("id").loc[part["id"], ["phase", "phase_id"]]
    assert missing_as_none(part["phase"]) == missing_as_none(expected["phase"])
    assert missing_as_none(part["phase_id"]) == missing_as_none(expected["phase_id"])


def missing_as_none(column: pd.Series) -> list[object]:
    """The values, a missing one as ``None`` whatever the dtype spells it (``None``, ``NaN``, ``<NA>``)."""
    return [None if pd.isna(value) else value for value in column.tolist()]


# -- 1. phases in query frames ----------------------------------------------------------------------


def test_query_frames_of_the_example_tape_carry_the_phase_of_the_whole_tape(example_home: Path) -> None:
    tape = example(example_home, LONG)
    whole = tape.to_frame()
    searched = tape.query().text("DST").newest_first().to_frame()
    assert len(searched) == 18
    same_phases(searched, whole)
    assert set(searched.set_index("id").loc[[143, 144], "phase"]) == {"phase/tests"}
    messages = tape.query().kinds("message").to_frame()
    assert messages["phase"].notna().all()
    same_phases(messages, whole)
    same_phases(tape.query().after_anchor("phase/tests").to_frame(), whole)


NAMES = st.sampled_from(["phase/plan", "phase/build", "auto_handoff/context_overflow", "memory/open"])
STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("anchor"), NAMES),
        st.tuples(st.just("message"), st.sampled_from(["alpha", "beta", "gamma"])),
        st.tuples(st.just("run"), st.integers(0, 50)),
    ),
    max_size=30,
)


def fill(tape: Tape, steps: list[tuple[str, object]]) -> None:
    for kind, value in steps:
        if kind == "anchor" and str(value).startswith("memory/"):
            tape.append(TapeEntry.anchor(str(value), {"version": 1}))
        elif kind == "anchor":
            tape.handoff(str(value))
        elif kind == "message":
            tape.append_message({"role": "user", "content": str(value)})
        else:
            usage = {"prompt_tokens": value, "completion_tokens": 1}
            tape.append_event("run", {"status": "ok", "model": "m", "usage": usage})


@settings(max_examples=40, deadline=None)
@given(
    steps=STEPS,
    text=st.sampled_from([None, "alpha", "ph"]),
    kinds=st.sampled_from([(), ("message",), ("anchor", "event")]),
    newest_first=st.booleans(),
    limit=st.sampled_from([None, 1, 3]),
)
def test_any_query_frame_carries_the_phase_of_the_whole_tape(
    tmp_path_factory: pytest.TempPathFactory,
    steps: list[tuple[str, object]],
    text: str | None,
    kinds: tuple[str, ...],
    newest_first: bool,
    limit: int | None,
) -> None:
    tape = open_tape("t", store=FileTapeStore(tmp_path_factory.mktemp("q")))
    fill(tape, steps)
    query = tape.query().kinds(*kinds)
    if text is not None:
        query = query.text(text)
    if newest_first:
        query = query.newest_first()
    if limit is not None:
        query = query.limit(limit)
    part = query.to_frame()
    same_phases(part, tape.to_frame())
    assert (part["tape_name"] == "t").all()


# -- 2. phases that share a name --------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(steps=STEPS)
def test_usage_has_one_row_per_phase_instance(tmp_path_factory: pytest.TempPathFactory, steps: list) -> None:
    tape = open_tape("t", store=FileTapeStore(tmp_path_factory.mktemp("u")))
    fill(tape, steps)
    frame = tape.to_frame()
    usage = frame.tape.usage(by="phase")
    runs = frame[frame["name"] == "run"]
    assert len(usage) == runs["phase_id"].nunique(dropna=False) if len(runs) else usage.empty
    assert usage["turns"].sum() == len(runs)
    for (_, row), (_, anchor_id) in zip(usage.iterrows(), usage["phase_id"].items(), strict=True):
        own = runs[runs["phase_id"].astype("float").fillna(-1) == (-1 if pd.isna(anchor_id) else anchor_id)]
        assert row["turns"] == len(own) and row["tokens_in"] == own["prompt_tokens"].sum()


def test_phases_that_share_a_name_stay_apart(tmp_path: Path) -> None:
    tape = open_tape("t", store=FileTapeStore(tmp_path))
    fill(tape, [("anchor", "phase/plan"), ("run", 1), ("anchor", "phase/build"), ("run", 2), ("run", 2)])
    fill(tape, [("anchor", "phase/plan"), ("run", 4), ("run", 4), ("run", 4)])
    frame = tape.to_frame()
    usage = frame.tape.usage(by="phase")
    assert usage.index.tolist() == ["phase/plan", "phase/build", "phase/plan"]
    assert usage["turns"].tolist() == [1, 2, 3] and usage["phase_seq"].tolist() == [1, 1, 2]
    plans = [ref.id for ref in tape.store.anchors("t") if ref.name == "phase/plan"]
    assert usage["phase_id"].tolist()[::2] == plans
    last = frame.tape.phase("phase/plan")
    assert set(last["phase_id"]) == {plans[-1]} and last["id"].min() == plans[-1]
    assert last["id"].tolist() == [e.id for e in tape.read() if e.id >= plans[-1]]  # what after() sees, anchor on
    assert set(frame.tape.phase("phase/plan", occurrence=0)["phase_id"]) == {plans[0]}
    assert len(frame.tape.phase("phase/plan", occurrence=None)) == len(frame[frame["phase"] == "phase/plan"])


def test_overflow_phases_of_the_example_tape_are_counted_apart(example_home: Path) -> None:
    frame = example(example_home, LONG).to_frame()
    starts = frame[(frame["kind"] == "anchor") & (frame["id"] == frame["phase_id"])]
    assert starts["phase_id"].is_unique and len(starts) == starts["phase"].size


# -- 3. frames of two tapes put together ------------------------------------------------------------


def test_concatenated_frames_stay_two_tapes(example_home: Path) -> None:
    long, trip = example(example_home, LONG).to_frame(), example(example_home, TRIP).to_frame()
    both = pd.concat([long, trip], ignore_index=True)
    assert set(both["tape_name"]) == {LONG, TRIP}
    after = both.tape.after("phase/trip-planning")
    assert set(after["tape_name"]) == {TRIP}
    assert after["id"].tolist() == trip.tape.after("phase/trip-planning")["id"].tolist()
    read = read_tapes(example_home)
    pd.testing.assert_frame_equal(
        read.drop(columns=["notebook", "agent"]).sort_values(["tape_name", "id"], ignore_index=True),
        both.sort_values(["tape_name", "id"], ignore_index=True),
        check_dtype=False,
        check_categorical=False,
    )


# -- 4. forks ---------------------------------------------------------------------------------------


def test_a_forks_copies_are_marked_and_counted_once(tmp_path: Path) -> None:
    store = FileTapeStore(tmp_path / "tapes")
    parent = open_tape("parent", store=store)
    fill(parent, [("anchor", "phase/a"), ("run", 10), ("run", 20), ("anchor", "phase/b"), ("run", 30)])
    child = parent.fork_session("child", from_anchor="phase/a")
    fill(child, [("run", 5)])
    frame = read_tapes(tmp_path)
    copied = frame[frame["forked_from"].notna()]
    assert set(copied["tape_name"]) == {"child"} and copied["forked_from"].str.startswith("tape://parent/").all()
    totals = frame.tape.usage(by=["model"])
    assert totals["tokens_in"].tolist() == [65] and totals["turns"].tolist() == [4]
    assert frame.tape.usage(by=["model"], forked=True)["tokens_in"].tolist() == [125]
    per_tape = frame.tape.usage(by="tape_name")
    assert per_tape.loc["parent", "tokens_in"] == 60 and per_tape.loc["child", "tokens_in"] == 5
    alone = child.to_frame().tape.usage(by="model")  # the child alone: its copies are its whole story
    assert alone["tokens_in"].tolist() == [65]
    overview = class_overview(store).set_index("tape_name")
    assert overview.loc["parent", "tokens"] + overview.loc["child", "tokens"] == 65 + 4


# -- 5. search limits -------------------------------------------------------------------------------


def test_search_without_a_limit_finds_every_match_and_a_cut_is_said(example_home: Path) -> None:
    tape = example(example_home, LONG)
    every = tape.query().text("e").newest_first().all()
    found = tape.search("e", limit=None)
    assert found == every and not found.cut and len(every) > 20
    first = tape.search("e")
    assert len(first) == 20 and first.cut and first == every[:20]
    assert not tape.search("e", limit=len(every)).cut
    with pytest.raises(TapeError, match="search limit"):
        tape.search("e", limit=-1)
