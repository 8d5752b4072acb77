"""A teacher's frame of a class on PostgreSQL: a lean read picks its rows in the database and gives what the whole
read filtered gives; archives come along when asked, named by their tape."""

from __future__ import annotations

import pandas as pd
import pytest
from harness.classroom import classroom

from bub_nb.tape import open_tape, read_tapes

pytestmark = pytest.mark.integration


def exactly(whole: pd.DataFrame, kinds: list[str], since: pd.Timestamp | None) -> pd.DataFrame:
    frame = whole
    if kinds:
        frame = frame[frame["kind"].isin(kinds)]
    if since is not None:
        frame = frame[frame["date"] >= since]
    frame = frame.reset_index(drop=True)
    frame["kind"] = frame["kind"].cat.remove_unused_categories()
    return frame


def test_a_teachers_lean_read_is_the_whole_read_filtered_and_archives_come_when_asked() -> None:
    room = classroom(students=2)
    moments = []
    for number, student in enumerate(room.students):
        tape = open_tape(f"lesson-{number}", store=room.dsn[student])
        tape.handoff("phase/one", {"summary": "first"})
        tape.append_message({"role": "user", "content": f"{student} asks"})
        tape.append_event("run", {"status": "ok", "model": "m", "usage": {"prompt_tokens": 5, "completion_tokens": 2}})
        moments.append(pd.Timestamp(tape.read()[-1].date))
        tape.reset(archive=True)
        tape.append_event("retract", {"ids": [[1, 1]], "reason": "typo"})
        tape.append_message({"role": "user", "content": f"{student} asks again"})
    teacher = room.dsn[room.teacher]
    whole = read_tapes(store=teacher)
    assert set(whole["owner"]) == set(room.students) and "archived" not in whole.columns
    for kinds, since in [
        (["message"], None),
        ([], moments[0]),
        (["message", "error"], moments[1]),
        (["tool_call"], None),
    ]:
        pd.testing.assert_frame_equal(read_tapes(store=teacher, kinds=kinds, since=since), exactly(whole, kinds, since))
    with_archives = read_tapes(store=teacher, include_archives=True)
    archived = with_archives[with_archives["archived"]]
    assert set(archived["tape_name"]) == set(whole["tape_name"])  # named by the tape, not by when it was archived
    assert archived.groupby("tape_name")["content"].apply(lambda texts: texts.str.endswith(" asks").sum()).eq(1).all()
    pd.testing.assert_frame_equal(
        with_archives[~with_archives["archived"]].drop(columns="archived").reset_index(drop=True), whole
    )
    own = read_tapes(store=room.dsn[room.students[0]], include_archives=True)
    assert set(own["owner"]) == {room.students[0]}
