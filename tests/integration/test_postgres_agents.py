"""A handoff between agents on PostgreSQL: both tapes in the database, references that name their owner, and a
student who may not read the sender's tape told so in one line."""

from __future__ import annotations

import threading

import pytest
from harness.classroom import classroom
from harness.shell import Notebook

import bub_nb
from bub_nb import Agent, Tape, open_tape
from bub_nb.agent.team import Team
from bub_nb.errors import NotHoldingError, TapeAccessError, TapeNotFoundError
from bub_nb.tape.stores.postgres import PostgresTapeStore


def test_a_handoff_between_agents_on_postgres_resolves_for_its_owner_and_the_teacher_only() -> None:
    room = classroom(students=2)
    ann, ben = room.students
    notebook = open_tape("lesson", store=room.dsn[ann])
    analyst = Agent(notebook, "offline", name="analyst")
    reviewer = Agent(notebook, "offline", name="reviewer")
    team = Team(notebook, [analyst, reviewer])
    analyst.run("What is the mean of 1, 2 and 3?")
    asked = next(e.id for e in analyst.tape.read() if e.kind == "message")
    done = team.handoff("review/1", sender="analyst", to="reviewer", summary=f"A mean was asked [#{asked}]")

    content = done.record["content"]
    assert content["refs"] == [f"tape://{ann}/lesson~analyst/entry/{asked}"]
    assert content["anchor"] == f"tape://{ann}/lesson~analyst/entry/{done.sent[-2].id}"
    assert reviewer.tape.view().anchor is not None and reviewer.tape.view().anchor.name == "review/1"
    assert team.holder() == "reviewer"
    with pytest.raises(NotHoldingError):
        analyst.run("Anything else?")
    reviewer.run("Is it right?")

    for reader in (room.dsn[ann], room.dsn[room.teacher]):
        entry = bub_nb.resolve(content["refs"][0], store=reader)
        assert entry.payload["content"] == "What is the mean of 1, 2 and 3?"
        assert bub_nb.resolve(content["anchor"], store=reader).payload["name"] == "review/1"
    with pytest.raises(TapeAccessError, match=rf"^Address .* names tape 'lesson~analyst' of role '{ann}', which role "):
        bub_nb.resolve(content["refs"][0], store=room.dsn[ben])
    teacher = PostgresTapeStore(room.dsn[room.teacher])
    assert bub_nb.resolve(f"tape://{ann}/lesson~reviewer/anchor/review/1", store=teacher).id == 1
    teacher.close()


def test_the_magics_hand_off_between_agents_on_postgres(nb: Notebook) -> None:
    room = classroom(students=1)
    (ann,) = room.students
    nb.run(f'%config BubMagics.store = "{room.dsn[ann]}"')
    nb.run("%tape use lesson --new")
    nb.run("%agent analyst\n%agent reviewer")
    nb.run("%%bub --agent analyst\nWhat is the mean of 1, 2 and 3?")
    nb.run("%handoff review/1 --from analyst --to reviewer summary='A mean was asked [#6]'")
    nb.run("%context --agent reviewer --expand-refs")
    assert f"`tape://{ann}/lesson~analyst/entry/6` (message): What is the mean of 1, 2 and 3?" in nb.shown()
    nb.run("%%bub\nIs it right?")
    assert nb.magics.session.last_agent.tape.name == "lesson~reviewer"
    teacher = PostgresTapeStore(room.dsn[room.teacher])
    assert f"{ann}/lesson~reviewer" in teacher.list_tapes()
    teacher.close()


def test_a_teacher_opens_a_students_tape_by_owner_and_name_from_the_magics(nb: Notebook) -> None:
    room = classroom(students=2)
    ann, ben = room.students
    lesson = open_tape("lesson", store=room.dsn[ann])
    lesson.append_message({"role": "user", "content": "What is the mean of 1, 2 and 3?"})
    nb.run(f'%config BubMagics.store = "{room.dsn[room.teacher]}"')
    nb.run(f"%tape use {ann}/lesson")
    assert nb.magics.session.tape.name == f"{ann}/lesson" and len(nb.magics.session.tape) == 1
    nb.run(f'%config BubMagics.tape = "{ann}/lesson"')
    assert nb.run("%tape info").entries == 1
    with pytest.raises(TapeNotFoundError) as refused:
        open_tape(f"{ann}/lesson", store=room.dsn[ben], create=False)
    assert "--new" not in str(refused.value) and "create=True" not in str(refused.value)
    assert f"role {ann!r}" in str(refused.value)


def test_two_kernels_on_postgres_hand_the_conversation_on_under_one_lock_in_the_database() -> None:
    room = classroom(students=1)
    (ann,) = room.students
    kernels = [PostgresTapeStore(room.dsn[ann]) for _ in range(2)]  # two kernels: two pools, two sessions
    mine, theirs = (Team(Tape("lesson", store), ["rev", "other"]) for store in kernels)
    mine.tape_of("main").append_message({"role": "user", "content": "hi"})
    entered, go = threading.Event(), threading.Event()
    outcome: list[BaseException | None] = []

    def hand_on() -> None:
        with theirs.locked():  # the other kernel checks and writes under the lock
            entered.set()
            go.wait()
            theirs.handoff("theirs", to="other")

    def mine_now() -> None:
        try:
            mine.handoff("mine", to="rev")
            outcome.append(None)
        except BaseException as error:  # the refusal is the outcome under test
            outcome.append(error)

    other_kernel = threading.Thread(target=hand_on)
    other_kernel.start()
    entered.wait()
    assert mine.holder() is None  # what this kernel read before the other one wrote
    waiting = threading.Thread(target=mine_now)
    waiting.start()
    go.set()
    other_kernel.join()
    waiting.join()
    assert isinstance(outcome[0], NotHoldingError) and "'other' holds it now" in str(outcome[0])
    assert mine.holder() == theirs.holder() == "other"
    assert [e.name for e in mine.tape_of("main").read() if e.kind == "anchor"] == ["theirs"]
    for store in kernels:
        store.close()
