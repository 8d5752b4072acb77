"""A class on one database: students whose notebooks share a path each get their own tape, in real kernels too."""

from __future__ import annotations

import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from harness.classroom import classroom
from harness.kernel import kernel_environment, running_kernel
from harness.widgets import find

from bub_nb import class_overview, open_tape
from bub_nb.tape import session_tape_name
from bub_nb.tape.stores.postgres import PostgresTapeStore

S = "bub_nb"
HUB_NOTEBOOK = "/home/jovyan/lesson.ipynb"  # every user's notebook has this path on a hub image
SHARED_NAME = session_tape_name("/home/jovyan", "lesson.ipynb")


def test_students_whose_notebooks_share_a_path_get_their_own_tapes(monkeypatch: pytest.MonkeyPatch) -> None:
    room = classroom(students=2)
    monkeypatch.setenv("JPY_SESSION_NAME", HUB_NOTEBOOK)
    ann, ben = room.students
    for student in (ann, ben):
        tape = open_tape(store=room.dsn[student])
        assert tape.name == SHARED_NAME
        tape.append_message({"role": "user", "content": f"{student} was here"})
    teacher = PostgresTapeStore(room.dsn[room.teacher], schema=S)
    frame = class_overview(teacher)
    assert list(frame["owner"]) == [ann, ben] and list(frame["notebook"]) == [HUB_NOTEBOOK] * 2
    assert list(frame["tape_name"]) == [f"{ann}/{SHARED_NAME}", f"{ben}/{SHARED_NAME}"]
    for student in (ann, ben):
        (entry,) = open_tape(f"{student}/{SHARED_NAME}", store=teacher).read()
        assert entry.payload["content"] == f"{student} was here"
    with teacher.follow(f"{ben}/{SHARED_NAME}") as follower:  # the teacher follows one of the two, live
        open_tape(store=room.dsn[ann]).append_message({"role": "user", "content": "ann again"})
        open_tape(store=room.dsn[ben]).append_message({"role": "user", "content": "ben again"})
        assert [e.payload["content"] for e in follower.poll(timeout=10)] == ["ben again"]
    teacher.close()


def _student_cells(role: str, number: int) -> list[str]:
    return [
        f"%%bub\nHello, I am {role}",
        f"%handoff phase/one summary='{role} finished part one'",
        f"%%bub\nA second question from {role}",
        f"%tape fork side-{number} --intention 'try another way'",
        f"%%bub\nOn the fork, {role}",
    ]


def test_a_class_of_three_students_and_a_teacher_in_real_kernels_with_the_same_notebook_path(tmp_path: Path) -> None:
    room = classroom(students=3)
    with ExitStack() as stack:
        kernels: dict[str, Any] = {}
        for role in [*room.students, room.teacher]:
            env = kernel_environment(tmp_path / role / "home", BUB_STORE=room.dsn[role], JPY_SESSION_NAME=HUB_NOTEBOOK)
            (tmp_path / role).mkdir()
            kernels[role] = stack.enter_context(running_kernel(tmp_path / role, env))
        started = time.monotonic()
        sent = {
            role: kernels[role].queue(_student_cells(role, number))
            for number, role in enumerate(room.students, start=1)
        }
        teacher = kernels[room.teacher]
        teacher.ok("%%bub\nWhat are my students doing?")
        looks = [teacher.ok("import bub_nb; print(len(bub_nb.class_overview()))") for _ in range(3)]
        for role, ids in sent.items():
            replies = kernels[role].replies(ids, timeout=120)
            assert [r["status"] for r in replies] == ["ok"] * 5, (role, [r.get("evalue") for r in replies])
        overview = teacher.ok(
            "frame = bub_nb.class_overview()\n"
            "print(frame[['tape_name', 'owner', 'turns', 'last_anchor']].to_json(orient='records'))"
        )
        elapsed = time.monotonic() - started
    assert all(int(look) >= 1 for look in looks)
    import json

    rows = {row["tape_name"]: row for row in json.loads(overview)}
    for number, student in enumerate(room.students, start=1):
        session, fork = rows[f"{student}/{SHARED_NAME}"], rows[f"{student}/side-{number}"]  # a fork copies the runs
        assert session["owner"] == fork["owner"] == student and session["turns"] == 2 and fork["turns"] == 3
        assert session["last_anchor"] == "phase/one"
    assert rows[SHARED_NAME]["owner"] == room.teacher and rows[SHARED_NAME]["turns"] == 1
    # Each student's tapes hold only their own words, with ids 1..n and counters that agree.
    for student in room.students:
        said = room.sql(
            f"SELECT e.payload::text FROM {S}.entries e JOIN {S}.tapes t ON t.key = e.tape "
            "WHERE t.owner = %s AND e.kind = 'message'",
            (student,),
        )
        others = [s for s in room.students if s != student]
        assert said and not any(other in text for (text,) in said for other in others)
    counters = room.sql(
        f"SELECT t.entries, t.last_id, count(e.id), max(e.id) FROM {S}.tapes t JOIN {S}.entries e "
        "ON e.tape = t.key GROUP BY t.key"
    )
    assert len(counters) == 7 and all(a == b == c == d for a, b, c, d in counters)
    forks = room.sql(f"SELECT owner, child FROM {S}.lineage ORDER BY owner")
    assert forks == [(student, f"side-{n}") for n, student in enumerate(room.students, start=1)]
    print(f"class of 3 students and a teacher: {elapsed:.1f} s")


def test_a_teacher_pulls_the_class_into_a_folder_per_student(tmp_path: Path) -> None:
    from harness.tapes import bub_read

    from bub_nb.tape.stores.postgres.sync import pull

    room = classroom(students=2)
    for student in room.students:
        open_tape("lesson", store=room.dsn[student]).append_message({"role": "user", "content": f"{student}'s"})
    teacher = PostgresTapeStore(room.dsn[room.teacher], schema=S)
    copied = pull(teacher, tmp_path)
    assert copied.entries == {f"{s}/lesson": 1 for s in room.students} and copied.left_alone == {}
    for student in room.students:
        (line,) = bub_read(tmp_path / "tapes" / student / "lesson.jsonl")
        assert line["payload"]["content"] == f"{student}'s"
    assert pull(teacher, tmp_path).total == 0  # the second time, nothing is new
    teacher.close()


def test_a_teacher_opens_each_students_last_turn_from_the_class_overview() -> None:
    from bub_nb.agent import Agent
    from bub_nb.context import student_turn, view_of_turn
    from bub_nb.notebook.widgets import ClassOverview

    room = classroom(students=2)
    for student in room.students:
        tape = open_tape("lesson", store=room.dsn[student])
        Agent(tape, "offline").run(f"{student} asks first")
        Agent(tape, "offline").run(f"{student} asks again")
    teacher = PostgresTapeStore(room.dsn[room.teacher], schema=S)
    overview = ClassOverview(teacher)
    for student in room.students:
        name = f"{student}/lesson"
        assert name in list(overview.frame["tape_name"])
        turn = student_turn(name, teacher)
        assert turn.messages[-1]["content"] == f"{student} asks again"
        assert turn == view_of_turn(open_tape("lesson", store=room.dsn[student]), -1)  # as the student sees it
        assert overview.turn(name).view == turn
    teacher.close()


def test_the_overview_shows_an_api_tapes_notebook_and_the_archived_tapes() -> None:
    from bub_nb.notebook.widgets import ClassOverview
    from bub_nb.tape import TapeEntry
    from bub_nb.tape.events import NOTEBOOK

    room = classroom(students=2)
    ann, ben = room.students
    stores = {role: PostgresTapeStore(room.dsn[role], schema=S) for role in (ann, ben, room.teacher)}
    written = TapeEntry.event(NOTEBOOK, {"path": "/home/ann/lesson.ipynb"})
    stores[ann].append("lesson", [written, TapeEntry.message({"role": "user", "content": "first try"})])
    assert stores[ann].reset("lesson", archive=True) is not None
    stores[ann].append("lesson", [TapeEntry.message({"role": "user", "content": "second try"})])
    stores[ben].append("notes", [TapeEntry.message({"role": "user", "content": "no notebook said"})])
    frame = class_overview(stores[room.teacher])
    assert list(frame["tape_name"]) == [f"{ann}/lesson", f"{ann}/lesson", f"{ben}/notes"]
    assert list(frame["archived"].notna()) == [False, True, False] and list(frame["entries"]) == [1, 2, 1]
    assert frame["notebook"].tolist()[1] == "/home/ann/lesson.ipynb"  # from the tape's notebook event
    assert frame["notebook"].isna().tolist() == [True, False, True]
    assert list(class_overview(stores[ben])["tape_name"]) == ["notes"]  # a student still sees only their own
    overview = ClassOverview(stores[room.teacher])
    html = overview.to_html()
    assert html.count("bub-class-row bub-archived") == 1 and "/home/ann/lesson.ipynb" in html
    assert html.count(f"{ann}/lesson (archived ") == 1 and f"{ann}/lesson (archived " in overview.to_text()
    picker = find(overview.widget, "bub-student-picker")
    assert [value for _label, value in picker.options] == [f"{ann}/lesson", f"{ben}/notes"]  # live tapes to open
    for store in stores.values():
        store.close()
