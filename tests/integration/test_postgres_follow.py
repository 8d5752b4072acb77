"""Following a tape another process writes: NOTIFY wakes the reader; views and timelines refresh themselves."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from harness.tapes import postgres_store

from bub_nb import open_tape
from bub_nb.notebook.widgets import ContextView, TapeTimeline
from bub_nb.tape import TapeEntry

TESTS = Path(__file__).resolve().parents[1]


def other_process_writes(dsn: str, schema: str, tape: str, count: int) -> subprocess.Popen[str]:
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); from harness.tapes import postgres_writer_process as w; "
        "w(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), 'owner')"
    )
    return subprocess.Popen(
        [sys.executable, "-c", code, str(TESTS), dsn, schema, tape, str(count)], stdout=subprocess.PIPE, text=True
    )


def eventually(check: Callable[[], bool], seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


def test_a_follower_is_woken_by_the_write_not_by_its_timeout(postgres: object) -> None:
    store = postgres_store()
    store.append("t", [TapeEntry.anchor("session/start")])
    with store.follow("t") as follower:
        polled: list[list[TapeEntry]] = []
        waiting = threading.Thread(target=lambda: polled.append(follower.poll(timeout=3600)))
        waiting.start()
        store.append("t", [TapeEntry.event("tick")])
        waiting.join(timeout=120)  # bounds a hang only: without the NOTIFY the poll would wait an hour
        assert not waiting.is_alive() and [[e.id for e in new] for new in polled] == [[2]]
        assert follower.poll(timeout=0.1) == []


def test_a_follower_sees_everything_another_process_writes(postgres: object) -> None:
    store = postgres_store()
    with store.follow("t", after=0) as follower:
        writer = other_process_writes(store.dsn, store.schema, "t", 50)
        seen: list[int] = []
        deadline = time.monotonic() + 60
        while len(seen) < 50 and time.monotonic() < deadline:
            seen += [e.id for e in follower.poll(timeout=1)]
        writer.communicate(timeout=60)
    assert seen == list(range(1, 51))


def test_context_view_and_timeline_follow_a_tape_as_its_owner_writes(postgres: object) -> None:
    store = postgres_store()
    tape = open_tape("lesson", store=store)
    tape.ensure_bootstrap_anchor()
    view, timeline = ContextView(tape, follow=True), TapeTimeline(tape, follow=True)
    try:
        assert view.following and timeline.following
        other_process_writes(store.dsn, store.schema, "lesson", 3).communicate(timeout=60)
        assert eventually(lambda: "owner 2 0" in [m.get("content") for m in view.view.messages])
        assert eventually(lambda: timeline.activity.entries == 5)
    finally:
        view.unfollow()
        timeline.unfollow()
    assert not view.following and not timeline.following


def test_a_file_tape_can_be_followed_too(tmp_path: Path) -> None:
    tape = open_tape("lesson", home=tmp_path)
    tape.ensure_bootstrap_anchor()
    view = ContextView(tape, follow=True)
    try:
        open_tape("lesson", home=tmp_path).append_message({"role": "user", "content": "from elsewhere"})
        assert eventually(lambda: "from elsewhere" in [m.get("content") for m in view.view.messages])
    finally:
        view.unfollow()
