"""Writers in other processes: two real Jupyter kernels on one tape, and a kernel beside a Bub-style writer.

bub_nb appends under a cross-process lock with one ``O_APPEND`` write per batch, so two kernels never
interleave bytes or reuse ids. Bub appends whole lines without that lock, picking "last id it read + 1";
against it bub_nb still never interleaves bytes and always continues after the highest id present,
but nothing stops Bub from picking an id bub_nb is writing at the same moment.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import orjson
import pytest
from harness.kernel import Kernel

from bub_nb.errors import TapeError
from bub_nb.tape import FileTapeStore, open_tape
from bub_nb.tape.forks.merge import merge_tapes

jupyter_client = pytest.importorskip("jupyter_client")
pytest.importorskip("ipykernel")


@contextmanager
def kernels(count: int, cwd: Path, env: dict[str, str]) -> Iterator[list[Kernel]]:
    from jupyter_client import KernelManager

    with ExitStack() as stack:
        managers = []
        for _ in range(count):
            manager = KernelManager(kernel_name="python3")
            manager.start_kernel(cwd=str(cwd), env={**os.environ, **env})
            stack.callback(manager.shutdown_kernel, now=True)
            managers.append(manager)
        started = []
        for manager in managers:
            client = manager.blocking_client()
            client.start_channels()
            stack.callback(client.stop_channels)
            client.wait_for_ready(timeout=60)
            started.append(Kernel(client))
        yield started


def lines_of(path: Path) -> list[bytes]:
    data = path.read_bytes()
    assert data.endswith(b"\n"), "the file ends inside a line"
    return data[:-1].split(b"\n")


KERNEL_SETUP = """
%load_ext bub_nb
%tape use {path} --new
"""

KERNEL_LOOP = """
import pathlib, time
from bub_nb.tape import open_tape
_ip = get_ipython()
_tape = open_tape({path!r})
_flags = pathlib.Path({flags!r})
def _meet(step):
    # A barrier between the two kernels: each quarter of the loop starts once both finished the one before,
    # so the two write at the same time however the machine schedules them.
    (_flags / f"{label}-{{step}}").touch()
    while not (_flags / f"{other}-{{step}}").exists():
        time.sleep(0.002)
for _i in range({count}):
    if _i % ({count} // 4) == 0:
        _meet(_i)
    _ip.run_line_magic("handoff", f"{label}/{{_i}} i={{_i}} label={label}")
    _tape.append_message({{"role": "user", "content": f"{label} {{_i}}"}}, writer={label!r})
    if _i % 60 == 0:
        _ip.run_cell_magic("bub", "", f"turn {{_i}} from {label}")
"""


def test_two_kernels_appending_through_magics_never_lose_or_interleave_a_line(tmp_path: Path) -> None:
    path = tmp_path / "shared.jsonl"
    count = 300
    env = {"BUB_HOME": str(tmp_path / "home"), "BUB_MODEL": "offline"}
    with kernels(2, tmp_path, env) as (first, second):
        for kernel in (first, second):
            kernel.ok(KERNEL_SETUP.format(path=path))
        flags = tmp_path / "barrier"
        flags.mkdir()
        sent = [kernel.send(KERNEL_LOOP.format(path=str(path), count=count, label=label, other=other, flags=str(flags)))
                for kernel, label, other in ((first, "ka", "kb"), (second, "kb", "ka"))]  # fmt: skip
        first.wait(sent[0])
        second.wait(sent[1])
        assert first.value("len(_tape.read())") == second.value("len(_tape.read())")
        assert first.value("_ip.run_line_magic('tape', 'info').entries") == len(lines_of(path))

    records = [orjson.loads(line) for line in lines_of(path)]  # every line decodes: nothing interleaved
    assert [r["id"] for r in records] == list(range(1, len(records) + 1))
    turns = 2 * len(range(0, count, 60))
    runs = [r for r in records if r["kind"] == "event" and r["payload"]["name"] == "run"]
    assert len(runs) == turns and {r["payload"]["data"]["status"] for r in runs} == {"ok"}
    for label in ("ka", "kb"):
        messages = [r["payload"]["content"] for r in records if r["meta"].get("writer") == label]
        assert messages == [f"{label} {i}" for i in range(count)]
        anchors = [r for r in records if r["kind"] == "anchor" and r["payload"]["name"].startswith(f"{label}/")]
        assert [a["payload"]["state"] for a in anchors] == [{"i": i, "label": label} for i in range(count)]
    by_row = {r["id"]: row for row, r in enumerate(records)}
    for anchor in (r for r in records if r["kind"] == "anchor" and r["payload"]["name"].startswith(("ka/", "kb/"))):
        event = records[by_row[anchor["id"]] + 1]  # one handoff is one write: anchor and event stay together
        assert event["kind"] == "event" and event["payload"]["data"]["name"] == anchor["payload"]["name"]
    labels = [r["meta"].get("writer") for r in records if r["meta"].get("writer")]
    switches = sum(1 for a, b in itertools.pairwise(labels) if a != b)
    # The lock has no fairness, so writers alternate in bursts; the barrier makes the bursts overlap in every
    # quarter of the loop, so there is a switch in each.
    rows = {label: [row for row, value in enumerate(labels) if value == label] for label in ("ka", "kb")}
    overlapping = rows["ka"][0] < rows["kb"][-1] and rows["kb"][0] < rows["ka"][-1]
    assert overlapping and switches >= 4, f"the two kernels did not write at the same time ({switches} switches)"
    for run_id in {r["meta"]["run_id"] for r in runs}:
        kinds = [r["kind"] for r in records if r["meta"].get("run_id") == run_id]
        assert kinds[:2] == ["system", "message"] and kinds[-2:] == ["message", "event"]

    tape = open_tape(path, store=FileTapeStore(tmp_path))
    info = tape.info()
    assert (info.entries, info.bad_lines, info.torn_tail_bytes) == (len(records), 0, 0)
    anchors = [(r["id"], r["payload"]["name"]) for r in records if r["kind"] == "anchor"]
    assert [(a.id, a.name) for a in tape.anchors(limit=None)] == anchors


# -- beside a Bub-style writer ---------------------------------------------------------------------------------

BUB_WRITER = textwrap.dedent(
    """
    import json, os, sys, time
    from dataclasses import asdict, dataclass, field
    from datetime import UTC, datetime

    @dataclass(frozen=True)
    class TapeEntry:  # Bub 0.5's entry, field for field
        id: int
        kind: str
        payload: dict
        meta: dict = field(default_factory=dict)
        date: str = field(default_factory=lambda: datetime.now(UTC).isoformat())

    path, count = sys.argv[1], int(sys.argv[2])
    offset, last_id, theirs = 0, 0, 0

    def read_appended():
        # Bub reads what was appended since its last read and takes the last id it read + 1; no lock
        global offset, last_id, theirs
        if os.path.exists(path):
            with open(path, "rb") as handle:
                handle.seek(offset)
                data = handle.read()
            complete = data[: data.rfind(b"\\n") + 1]
            offset += len(complete)
            for line in complete.splitlines():
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if isinstance(record, dict) and isinstance(record.get("id"), int):
                    last_id = record["id"]
                    theirs += record.get("meta", {}).get("writer") == "nb"

    for number in range(count):
        read_appended()
        # Halfway, wait until the other writer has written twice: the two writers overlap however busy the
        # machine is (the wait is for lines in the file, not for time to pass).
        while number == count // 2 and theirs < 2:
            time.sleep(0.001)
            read_appended()
        if number % 25 == 0:
            entry = TapeEntry(last_id + 1, "anchor", {"name": f"bub/{number}", "state": {"by": "bub"}})
        else:
            entry = TapeEntry(last_id + 1, "message", {"role": "user", "content": f"bub {number} — ünïcode"})
        line = (json.dumps(asdict(entry), ensure_ascii=False) + "\\n").encode()
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)  # one whole line per write(), as Python's buffered writer does for a line
        finally:
            os.close(fd)
        last_id = entry.id
        time.sleep(0.0005)
    """
)

KERNEL_BESIDE_BUB = """
import time
from bub_nb.tape import open_tape
_ip = get_ipython()
_tape = open_tape({path!r})
_mine = []
for _i in range({count}):
    time.sleep(0.001)  # Bub re-reads after each line; leave it room to keep up
    if _i % 20 == 0:
        _ip.run_line_magic("handoff", f"nb/{{_i}}")
        _mine.append(_tape.last_id)
    _entry = _tape.append_message({{"role": "user", "content": f"nb {{_i}}"}}, writer="nb")
    _mine.append(_entry.id)
"""


def test_beside_a_bub_writer_lines_stay_whole_and_bub_nb_continues_after_the_highest_id(tmp_path: Path) -> None:
    path = tmp_path / "shared.jsonl"
    open_tape(path, store=FileTapeStore(tmp_path)).ensure_bootstrap_anchor()
    count = 400
    env = {"BUB_HOME": str(tmp_path / "home"), "BUB_MODEL": "offline"}
    with kernels(1, tmp_path, env) as (kernel,):
        kernel.ok(KERNEL_SETUP.format(path=path))
        size = path.stat().st_size
        bub = subprocess.Popen([sys.executable, "-c", BUB_WRITER, str(path), str(count)])
        while path.stat().st_size == size and bub.poll() is None:  # start once Bub is writing
            time.sleep(0.001)
        try:
            kernel.ok(KERNEL_BESIDE_BUB.format(path=str(path), count=count))
        finally:
            assert bub.wait(120) == 0
        ours = kernel.value("_mine")
        after = kernel.value("_tape.append_message({'role': 'user', 'content': 'alone again'}).id")

    lines = lines_of(path)
    # bub_nb may leave a lone line break where it set aside a Bub line still being written; both readers skip it
    records = [orjson.loads(line) for line in lines if line.strip()]  # every line decodes: no interleaved bytes
    bub_rows = [r for r in records if r["payload"].get("content", "").startswith("bub ") or "by" in str(r["payload"])]
    nb_rows = [r for r in records if r["meta"].get("writer") == "nb"]
    assert len(bub_rows) == count and len(nb_rows) == count
    assert [r["payload"]["content"] for r in nb_rows] == [f"nb {i}" for i in range(count)]
    positions = [row for row, r in enumerate(records) if r in bub_rows]
    assert positions[-1] - positions[0] > count, "the two writers did not overlap"

    # bub_nb's own ids are unique and increasing, and each is above every id that was in the file when it
    # wrote its previous entry. (A Bub line landing between bub_nb's look and its write may carry a higher id:
    # Bub takes no lock, so no look can see it coming.)
    assert ours == sorted(set(ours))
    ours_set = set(ours)
    highest = settled = 0
    races = 0
    for record in records:
        if record["id"] in ours_set and (record["meta"].get("writer") == "nb" or record["kind"] == "anchor"):
            assert record["id"] > settled, f"bub_nb wrote id {record['id']} though id {settled} was already read"
            races += record["id"] <= highest
            settled = highest
        highest = max(highest, record["id"])
    duplicates = len(records) - len({r["id"] for r in records})
    print(f"\nbeside Bub: {races} bub_nb ids raced by a Bub line, {duplicates} ids used twice (by Bub)")
    assert records[-1]["payload"]["content"] == "alone again"
    assert after == records[-1]["id"] == max(r["id"] for r in records[:-1]) + 1  # once Bub stops, ids follow its ids

    tape = open_tape(path, store=FileTapeStore(tmp_path))  # a fresh open, as the next process makes
    stats = tape.stats()  # counted without reading entries
    assert stats.entries == len(records) and stats.bad_lines == 0 and stats.torn_tail_bytes == 0
    ids = [r["id"] for r in records]
    if ids != sorted(set(ids)):  # Bub repeated an id: the kernel read on, a fresh open refuses until merged
        with pytest.raises(TapeError, match=r"ids out of order.*`bub-nb tapes merge`"):
            tape.read()
        merge_tapes(path)
        tape = open_tape(path, store=FileTapeStore(tmp_path))
        merged = tape.read()
        assert [e.id for e in merged] == sorted({e.id for e in merged})
        kept = [e.to_dict() for e in merged if e.name != "merge"]
        assert sorted(r["payload"].get("content", "") for r in kept) == sorted(
            r["payload"].get("content", "") for r in records
        )
    else:
        assert [e.to_dict() for e in tape.read()] == records
    assert sorted(a.name for a in tape.anchors(limit=None)) == sorted(
        r["payload"]["name"] for r in records if r["kind"] == "anchor"
    )
