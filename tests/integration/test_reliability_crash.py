"""Crash safety: tape writers killed with SIGKILL mid-append, and mid-write of the index sidecar.

The trials come from ``benchmarks/crash.py`` (which runs 200 of them); a writer killed inside a
``write()`` is made certain here by letting the writer process kill itself half-way through one.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import orjson
import pytest

from bub_nb.tape import FileTapeStore, TapeEntry, open_tape
from bub_nb.tape.stores._tape_file import IndexFile

ROOT = Path(__file__).resolve().parents[2]
CRASH_SCRIPT = ROOT / "benchmarks" / "crash.py"


def _crash_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bub_nb_crash_benchmark", CRASH_SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


crash = _crash_module()

# A writer that dies with SIGKILL inside one os.write to the tape ("tape") or to its index sidecar ("index-...")
# after writing a share of the bytes, or just before renaming a rewritten sidecar into place ("index-replace").
# It wraps os.write and os.replace themselves, so it does not depend on which module of the tape layer writes.
KILLED_WRITER = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path

    from bub_nb.tape import FileTapeStore, TapeEntry, open_tape

    path, where, share, script = Path(sys.argv[1]), sys.argv[2], float(sys.argv[3]), sys.argv[4]
    write, replace = os.write, os.replace

    def target(fd):
        name = os.readlink(f"/proc/self/fd/{fd}")
        return "tape" if name == str(path) else "index" if name.startswith(str(path) + ".idx") else None

    def killing_write(fd, data):
        if where == "none" or where.endswith("replace") or target(fd) != where.partition("-")[0]:
            return write(fd, data)
        write(fd, data[: int(len(data) * share)])
        os.kill(os.getpid(), signal.SIGKILL)

    def killing_replace(source, destination, **kwargs):
        if where.endswith("replace") and str(destination).endswith(".idx"):
            os.kill(os.getpid(), signal.SIGKILL)
        return replace(source, destination, **kwargs)

    os.write, os.replace = killing_write, killing_replace
    tape = open_tape(path, store=FileTapeStore(path.parent))
    tape.stats()
    for word in script.split():
        if word.startswith("@"):
            tape.append(TapeEntry.anchor(word[1:], {"by": "killed writer"}))
        else:
            tape.append_message({"role": "user", "content": word})
        print(tape.last_id, flush=True)
    """
)


def run_killed_writer(path: Path, where: str, share: float, script: str) -> list[int]:
    """Run the writer until it kills itself (``where="none"``: to its end); returns the ids it acknowledged."""
    done = subprocess.run(
        [sys.executable, "-c", KILLED_WRITER, str(path), where, str(share), script],
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == (0 if where == "none" else -9), done.stderr.decode()
    return [int(line) for line in done.stdout.split()]


def scan(path: Path) -> tuple[list[dict], int, bytes]:
    """The whole entries of a tape file, its undecodable lines and its torn tail, read plainly."""
    data = path.read_bytes()
    cut = data.rfind(b"\n") + 1
    records, bad = [], 0
    for line in data[: cut - 1].split(b"\n") if cut else []:
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            bad += bool(line.strip())
            continue
        records.append(record)
    return records, bad, data[cut:]


def anchors_agree_with_the_file(path: Path) -> None:
    records, bad, tail = scan(path)
    tape = open_tape(path, store=FileTapeStore(path.parent))
    assert [(a.id, a.name) for a in tape.anchors(limit=None)] == [
        (r["id"], r["payload"]["name"]) for r in records if r["kind"] == "anchor"
    ]
    info = tape.info()
    assert (info.entries, info.bad_lines, info.torn_tail_bytes) == (len(records), bad, len(tail))
    assert [e.to_dict() for e in tape.read()] == records


# -- the kill trials --------------------------------------------------------------------------------------------


def test_sigkilled_writers_lose_no_acknowledged_entry_and_reuse_no_id(tmp_path: Path) -> None:
    run = crash.CrashRun(tmp_path, seed=11, rotate_bytes=8 * 1024 * 1024)
    summary = run.run(15)
    assert summary.problems == []
    assert (summary.lost, summary.corrupted, summary.id_reuse) == (0, 0, 0)
    assert summary.trials == 15 and summary.acknowledged > 100
    assert "mid-write" in summary.modes and len(summary.modes) >= 3


def test_the_crash_script_prints_its_table_and_fails_only_on_loss(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(CRASH_SCRIPT), "--trials", "3", "--seed", "5", "--keep", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    table = {line[:30].strip(): line[30:].split("  ")[0] for line in done.stdout.splitlines()}
    assert table["trials"] == "3" and int(table["acknowledged entries"]) > 0
    assert table["entries lost"] == "0" and table["id reuse"] == "0" and table["entries changed"] == "0"
    assert {"torn tails seen", "time"} <= set(table)
    assert list(tmp_path.glob("crash-5-*.jsonl"))


# -- a kill inside write(), made certain ----------------------------------------------------------------------


@pytest.mark.parametrize("share", [0.0, 0.3, 0.9])
def test_a_writer_killed_inside_write_leaves_a_torn_tail_that_is_set_aside_and_kept(
    tmp_path: Path, share: float
) -> None:
    path = tmp_path / "t.jsonl"
    tape = open_tape(path, store=FileTapeStore(tmp_path))
    tape.handoff("session/start", {"owner": "human"})
    tape.append_message({"role": "user", "content": "before the crash"})
    before = path.read_bytes()

    acknowledged = run_killed_writer(path, "tape", share, "dies-here")
    assert acknowledged == []
    data = path.read_bytes()
    assert data.startswith(before)
    torn = data[len(before) :]
    whole = len(TapeEntry(4, "message", {"role": "user", "content": "dies-here"}).to_line())
    assert len(torn) == int(whole * share) and b"\n" not in torn

    fresh = open_tape(path, store=FileTapeStore(tmp_path))
    info = fresh.info()
    assert (info.entries, info.torn_tail_bytes, info.bad_lines) == (3, len(torn), 0)
    assert [e.id for e in fresh.read()] == [1, 2, 3]

    after = fresh.append_message({"role": "user", "content": "after the crash"})
    assert after.id == 4
    data = path.read_bytes()
    assert data.startswith(before + torn)  # the torn bytes are kept, never overwritten
    info = open_tape(path, store=FileTapeStore(tmp_path)).info()
    assert info.bad_lines == (1 if torn else 0) and info.torn_tail_bytes == 0
    anchors_agree_with_the_file(path)


def test_a_writer_killed_just_before_the_line_break_keeps_the_id_of_its_whole_entry(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    tape = open_tape(path, store=FileTapeStore(tmp_path))
    tape.append_message({"role": "user", "content": "one"})
    line = TapeEntry(2, "message", {"role": "user", "content": "whole-but-unended"}).to_line()
    share = (len(line) - 1 + 0.5) / len(line)  # everything but the newline
    run_killed_writer(path, "tape", share, "whole-but-unended")
    _, _, tail = scan(path)
    assert orjson.loads(tail)["id"] == 2 and orjson.loads(tail)["payload"]["content"] == "whole-but-unended"
    assert open_tape(path, store=FileTapeStore(tmp_path)).info().torn_tail_bytes == len(line) - 1

    next_entry = open_tape(path, store=FileTapeStore(tmp_path)).append_message({"role": "user", "content": "three"})
    assert next_entry.id == 3
    records, bad, tail = scan(path)
    assert [r["id"] for r in records] == [1, 2, 3] and bad == 0 and tail == b""


def test_acknowledged_entries_survive_a_kill_in_a_later_write(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    open_tape(path, store=FileTapeStore(tmp_path)).handoff("session/start")
    # the writer kills itself in its first append, so write two with a plain writer first
    acknowledged = run_killed_writer(path, "none", 0.5, "a b @phase/c d")
    assert acknowledged == [3, 4, 5, 6]
    acknowledged = run_killed_writer(path, "tape", 0.5, "lost-in-write")
    assert acknowledged == []
    records, _, tail = scan(path)
    assert [r["id"] for r in records] == [1, 2, 3, 4, 5, 6] and tail
    assert [r["payload"].get("content") for r in records[2:]] == ["a", "b", None, "d"]
    anchors_agree_with_the_file(path)


# -- a kill inside the index sidecar's write ------------------------------------------------------------------


def _tape_with_a_persisted_sidecar(tmp_path: Path) -> Path:
    path = tmp_path / "t.jsonl"
    tape = open_tape(path, store=FileTapeStore(tmp_path))
    tape.handoff("session/start", {"owner": "human"})
    for number in range(5):
        tape.append_message({"role": "user", "content": f"m{number}"})
    tape.handoff("phase/1")
    tape.stats()
    assert IndexFile(Path(str(path) + ".idx")).path.exists()
    return path


def _next_process_appends_and_a_fresh_reader_agrees(path: Path) -> None:
    anchors_agree_with_the_file(path)  # the first look after the kill
    tape = open_tape(path, store=FileTapeStore(path.parent))  # the next writer persists the sidecar again
    tape.append_message({"role": "user", "content": "next process"})
    tape.stats()
    anchors_agree_with_the_file(path)
    tape.handoff("phase/after")
    tape.append_message({"role": "user", "content": "and on"})
    anchors_agree_with_the_file(path)
    sidecar = IndexFile(Path(str(path) + ".idx"))
    with path.open("rb") as handle:
        loaded = sidecar.load(handle, path.stat())
    assert loaded is not None, "the sidecar was not rebuilt into a usable one"
    records, _, _ = scan(path)
    assert loaded.anchor_ids == [r["id"] for r in records if r["kind"] == "anchor"]
    fresh = open_tape(path, store=FileTapeStore(path.parent))
    assert fresh.last_anchor().name == "phase/after"
    assert [e.payload.get("content") for e in fresh.from_last_anchor(kinds=["message"])] == ["and on"]


@pytest.mark.parametrize(
    ("where", "share"),
    [
        ("index-rewrite", 0.5),  # the first persist of a process writes a temporary file, then renames it
        ("index-replace", 1.0),  # killed between writing the temporary file and renaming it
        ("index-append", 0.0),
        ("index-append", 0.85),  # torn inside the checkpoint record
    ],
)
def test_a_kill_inside_the_index_write_is_repaired_on_the_next_open(tmp_path: Path, where: str, share: float) -> None:
    path = _tape_with_a_persisted_sidecar(tmp_path)
    if where != "index-append":
        Path(str(path) + ".idx").unlink()  # no sidecar: the writer's first look rewrites it
    acknowledged = run_killed_writer(path, where, share, "x @phase/killed y z")
    records, _, _ = scan(path)
    assert all(entry_id in {r["id"] for r in records} for entry_id in acknowledged)
    _next_process_appends_and_a_fresh_reader_agrees(path)


def test_a_kill_inside_the_anchor_record_of_the_index_loses_no_anchor(tmp_path: Path) -> None:
    """The next writer's first sidecar record must not be glued to the torn one (and so lost with it)."""
    path = _tape_with_a_persisted_sidecar(tmp_path)
    # the sidecar append is [anchors, marks?, checkpoint]: 10% of the bytes ends inside the anchor record
    run_killed_writer(path, "index-append", 0.1, "x @phase/killed y")
    _next_process_appends_and_a_fresh_reader_agrees(path)
