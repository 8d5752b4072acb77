"""The database store under load and failure: many writers, writers killed mid-transaction, a server restart."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harness.tapes import postgres_store

from bub_nb.errors import TapeError
from bub_nb.tape import TapeEntry, open_tape
from bub_nb.tape.stores.postgres import PostgresTapeStore

TESTS = Path(__file__).resolve().parents[1]


def writer(dsn: str, schema: str, tape: str, count: int, label: str, batch: int = 1) -> subprocess.Popen[str]:
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); from harness.tapes import postgres_writer_process as w; "
        "w(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6], int(sys.argv[7]))"
    )
    args = [str(TESTS), dsn, schema, tape, str(count), label, str(batch)]
    return subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE, text=True)


@pytest.mark.parametrize("tapes", [1, 30], ids=["one tape", "thirty tapes"])
def test_thirty_processes_append_two_hundred_each_and_lose_nothing(postgres: Any, tapes: int) -> None:
    store = postgres_store()
    processes = [writer(postgres.dsn(), store.schema, f"t{n % tapes}", 200, f"w{n}") for n in range(30)]
    outputs = [process.communicate(timeout=240)[0] for process in processes]
    assert [process.returncode for process in processes] == [0] * 30
    assert sum(len(out.splitlines()) for out in outputs) == 6000
    everything = [entry for name in store.list_tapes() for entry in store.read(name)]
    assert len(everything) == 6000
    for name in store.list_tapes():
        assert [e.id for e in store.read(name)] == list(range(1, 6000 // tapes + 1))
    for n in range(30):  # each writer's entries, all there, in its order
        texts = [e.payload["content"] for e in everything if e.meta.get("writer") == f"w{n}"]
        assert texts == [f"w{n} {number} 0" for number in range(200)]


def test_writers_killed_mid_transaction_lose_nothing_acknowledged(postgres: Any) -> None:
    store = postgres_store()
    processes = [writer(postgres.dsn(), store.schema, "t", 100_000, f"k{n}", batch=40) for n in range(6)]
    deadline = time.monotonic() + 60
    while store.stats("t").entries < 40 * 30 and time.monotonic() < deadline:  # all of them busy writing
        time.sleep(0.05)
    for process in processes:
        os.kill(process.pid, signal.SIGKILL)
    acknowledged = []
    for process in processes:
        out = process.communicate(timeout=30)[0]
        acknowledged += [line.split() for line in out.splitlines() if line.count(" ") == 3]
    entries = store.read("t")
    assert len(acknowledged) > 6 and [e.id for e in entries] == list(range(1, len(entries) + 1))
    by_id = {e.id: e for e in entries}
    for label, first, last, number in acknowledged:
        batch = [by_id[i].payload["content"] for i in range(int(first), int(last) + 1)]
        assert batch == [f"{label} {number} {part}" for part in range(40)]
    assert len(entries) % 40 == 0  # whole batches only: a killed transaction leaves nothing behind
    assert store.append("t", [TapeEntry.anchor("after")])[0].id == len(entries) + 1


@pytest.fixture
def own_server() -> Iterator[Any]:
    from harness.tapes import postgres_server

    from bub_nb.testing.postgres import PostgresServer

    postgres_server()  # skips or fails like every database test when the binaries are missing
    with PostgresServer() as server:
        yield server


def test_a_server_restart_mid_session_reconnects_and_no_turn_is_half_written(own_server: Any) -> None:
    from bub_nb.agent import Agent

    store = PostgresTapeStore(own_server.dsn(), pool_size=2)
    try:
        tape = open_tape("session", store=store)
        agent = Agent(tape, model="offline")
        agent.run("first question")
        turn_entries = len(tape)
        own_server.stop()
        with pytest.raises(TapeError) as caught:
            agent.run("asked while the server is down")
        assert "\n" not in str(caught.value) and "bub-nb-admin-secret" not in str(caught.value)
        own_server.start()
        assert len(tape) == turn_entries  # the failed turn left nothing
        agent.run("second question")
        kinds = [e.kind for e in tape.read(turn_entries + 1)]
        assert kinds[0] == "system" and kinds[-1] == "event" and "message" in kinds
        assert [e.id for e in tape.read()] == list(range(1, len(tape) + 1))
    finally:
        store.close()


def test_after_a_long_outage_the_first_use_works_and_each_failure_is_one_quiet_line(
    own_server: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Down long enough for the pool's reconnect backoff to pass half a minute, as a lunch-break restart is."""
    import logging
    import time

    store = PostgresTapeStore(own_server.dsn(), pool_size=2)
    try:
        tape = open_tape("outage", store=store)
        tape.append_message({"role": "user", "content": "before"})
        caplog.set_level(logging.INFO)
        own_server.stop()
        down = time.monotonic()
        for _ in range(2):
            with pytest.raises(TapeError) as caught:
                tape.append_message({"role": "user", "content": "while down"})
            # the direct probe answered, at once, rather than the pool after its wait for a connection
            assert "cannot be reached" in str(caught.value) and "\n" not in str(caught.value)
        time.sleep(max(0.0, 36 - (time.monotonic() - down)))
        own_server.start()
        tape.append_message({"role": "user", "content": "after"})
        assert [e.payload["content"] for e in tape.read()] == ["before", "after"]
        noise = [
            r.getMessage() for r in caplog.records if r.name.startswith("psycopg") and r.levelno >= logging.WARNING
        ]
        assert noise == []
    finally:
        store.close()
