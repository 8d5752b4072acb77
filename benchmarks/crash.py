"""Crash safety: SIGKILL a tape writer at random moments and prove that nothing it acknowledged is lost.

Each trial starts a writer process that appends to a tape through bub_nb's API (single entries,
bursts written as one batch, anchors, payloads up to several megabytes) and prints the id of every
entry once ``append`` has returned. The parent kills it with SIGKILL: at a random moment after start
(sometimes before the tape is even open), a random delay into the run, or just as a large write
begins, so kills land inside ``write()``. After every kill the parent checks the file:

- every acknowledged entry is there with its exact payload, and so is every other whole line;
- no byte that was in the file before the trial changed (the file only ever grows);
- ids are unique and strictly increasing, and the trial's ids all exceed every id present before it;
- ``open_tape`` in a fresh store reads it: ``read()``, ``anchors()`` and ``info()`` agree with a plain
  scan of the file, and a torn last line is set aside (``info().torn_tail_bytes``) and later counted
  as a bad line, never deleted;
- a store that stayed open across all trials (as a kernel would) agrees as well.

    python benchmarks/crash.py                   # 200 trials
    python benchmarks/crash.py --trials 20 --seed 7 --keep /tmp/crash-tapes

The tape is continued from trial to trial (so later writers start after torn lines and stale
indexes) and a new one is begun whenever it passes ``--rotate-mb``.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

LARGE = 256 * 1024
"""Characters of payload from which a write counts as large: the parent may aim its kill at it."""
PAUSE = 0.005
"""Seconds the writer waits after announcing a large write, so the parent can aim inside it."""

_TEXT = 'ünïcode — 漢字 "quotes" \\ tabs\t and\nnewlines; '


# -- what the writer writes ------------------------------------------------------------------------------------


def planned_entry(key: str) -> tuple[str, dict[str, Any]]:
    """The kind and payload of the entry called ``key`` (``"<writer>:<n>"``), the same in every process."""
    rng = random.Random(key)
    if rng.random() < 0.1:
        return "anchor", {"name": f"crash/{key}", "state": {"key": key, "note": _TEXT}}
    roll = rng.random()
    size = rng.randint(256 * 1024, 2 * 1024 * 1024) if roll < 0.08 else rng.randint(0, 3000)
    digest = hashlib.sha256(key.encode()).hexdigest()
    body = (digest + _TEXT) * (size // (len(digest) + len(_TEXT)) + 1)
    return "message", {"role": "user" if rng.random() < 0.5 else "assistant", "content": f"{key} {body[:size]}"}


def writer(path: Path, writer_id: int) -> None:
    """Append planned entries to ``path`` forever, printing ``<id> <key>`` after each append returns.

    Before a large write it prints ``w <bytes>``, so the parent can aim a kill into the write.
    """
    from bub_nb.tape import FileTapeStore, TapeEntry, open_tape

    tape = open_tape(path, store=FileTapeStore(path.parent))
    tape.stats()
    out = sys.stdout
    out.write("ready\n")
    out.flush()
    rng = random.Random(writer_id)
    number = 0
    while True:
        count = rng.randint(2, 12) if rng.random() < 0.2 else 1
        keys = [f"{writer_id}:{number + i}" for i in range(count)]
        number += count
        entries = [TapeEntry(0, *planned_entry(key), {"crash": key}) for key in keys]
        size = sum(len(str(e.payload.get("content", ""))) for e in entries)
        if size >= LARGE:
            out.write(f"w {size}\n")
            out.flush()
            time.sleep(PAUSE)  # lets the parent watch the file before the write starts
        stored = tape.extend(entries) if count > 1 else [tape.append(entries[0])]
        out.write("".join(f"{entry.id} {entry.meta['crash']}\n" for entry in stored))
        out.flush()
        if rng.random() < 0.3:
            time.sleep(rng.uniform(0, 0.004))


# -- what the parent checks ------------------------------------------------------------------------------------


@dataclass
class FileScan:
    """A tape file read the plain way, line by line, as Bub's reader would."""

    data: bytes
    records: list[dict[str, Any]] = field(default_factory=list)
    bad_offsets: list[int] = field(default_factory=list)
    tail: bytes = b""

    @classmethod
    def of(cls, path: Path) -> FileScan:
        data = path.read_bytes() if path.exists() else b""
        scan = cls(data)
        cut = data.rfind(b"\n") + 1
        scan.tail = data[cut:]
        offset = 0
        for line in data[: max(cut - 1, 0)].split(b"\n") if cut else []:
            record = _record(line)
            if record is not None:
                scan.records.append(record)
            elif line.strip():
                scan.bad_offsets.append(offset)
            offset += len(line) + 1
        return scan

    @property
    def tail_record(self) -> dict[str, Any] | None:
        """The torn tail, when the crash cut only the line break of a whole entry."""
        return _record(self.tail) if self.tail else None

    @property
    def max_id(self) -> int:
        ids = [r["id"] for r in self.records]
        if (tail := self.tail_record) is not None:
            ids.append(tail["id"])
        return max(ids, default=0)


def _record(line: bytes) -> dict[str, Any] | None:
    try:
        data = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if isinstance(data, dict) and type(data.get("id")) is int and isinstance(data.get("kind"), str):
        return data if isinstance(data.get("payload"), dict) else None
    return None


@dataclass
class TrialResult:
    """One kill and what the checks found after it."""

    mode: str
    acknowledged: int
    lost: int
    corrupted: int
    id_reuse: int
    torn_tail: bool
    problems: list[str]


@dataclass
class Summary:
    """All trials together."""

    trials: int = 0
    acknowledged: int = 0
    lost: int = 0
    corrupted: int = 0
    id_reuse: int = 0
    torn_tails: int = 0
    bad_lines: int = 0
    tapes: int = 0
    seconds: float = 0.0
    modes: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def add(self, result: TrialResult) -> None:
        self.trials += 1
        self.acknowledged += result.acknowledged
        self.lost += result.lost
        self.corrupted += result.corrupted
        self.id_reuse += result.id_reuse
        self.torn_tails += result.torn_tail
        self.modes[result.mode] = self.modes.get(result.mode, 0) + 1
        self.problems.extend(result.problems)

    def table(self) -> str:
        rows = [
            ("trials", str(self.trials)),
            ("kill moments", ", ".join(f"{mode} {count}" for mode, count in sorted(self.modes.items()))),
            ("acknowledged entries", str(self.acknowledged)),
            ("entries lost", f"{self.lost}  (must be 0)"),
            ("entries changed", f"{self.corrupted}  (must be 0)"),
            ("torn tails seen", str(self.torn_tails)),
            ("torn lines kept as bad lines", str(self.bad_lines)),
            ("id reuse", f"{self.id_reuse}  (must be 0)"),
            ("other problems", str(len(self.problems))),
            ("tapes", str(self.tapes)),
            ("time", f"{self.seconds:.1f} s"),
        ]
        width = max(len(name) for name, _ in rows)
        return "\n".join(f"{name:<{width}}  {value}" for name, value in rows)


class CrashRun:
    """Runs kill trials against tapes in ``directory``, continuing one tape until it passes ``rotate_bytes``."""

    def __init__(self, directory: Path, *, seed: int = 0, rotate_bytes: int = 16 * 1024 * 1024) -> None:
        from bub_nb.tape import FileTapeStore

        self.directory = directory
        self.rng = random.Random(seed)
        self.seed = seed
        self.rotate_bytes = rotate_bytes
        self.summary = Summary()
        self.trial_number = 0
        self._warm = FileTapeStore(directory)  # stays open across kills, as a kernel's store would
        self._new_tape()

    def _new_tape(self) -> None:
        self.summary.tapes += 1
        self.path = self.directory / f"crash-{self.seed}-{self.summary.tapes}.jsonl"
        self.torn_offsets: set[int] = set()  # where earlier trials left a torn tail
        self._last_scan: FileScan | None = None

    def run(self, trials: int, progress: Callable[[int, TrialResult], None] | None = None) -> Summary:
        started = time.perf_counter()
        for _ in range(trials):
            result = self.trial()
            self.summary.add(result)
            if progress is not None:
                progress(self.summary.trials, result)
        self.summary.problems.extend(self.final_append())
        self.summary.bad_lines = sum(len(FileScan.of(p).bad_offsets) for p in self.directory.glob("*.jsonl"))
        self.summary.seconds += time.perf_counter() - started
        return self.summary

    # -- one trial ---------------------------------------------------------------------------------------------

    def trial(self) -> TrialResult:
        if self.path.exists() and self.path.stat().st_size > self.rotate_bytes:
            self._new_tape()
        self.trial_number += 1
        writer_id = self.seed * 100_000 + self.trial_number
        before = self._last_scan if self._last_scan is not None else FileScan.of(self.path)
        mode, acks = self._kill_a_writer(writer_id)
        after = FileScan.of(self.path)
        problems = self._check(before, after, acks)
        by_id = {r["id"]: r for r in after.records}
        lost = corrupted = 0
        for entry_id, key in acks:
            record = by_id.get(entry_id)
            if record is None or record["meta"].get("crash") != key:
                lost += 1
                problems.append(f"acknowledged entry #{entry_id} ({key}) is not on the tape")
            elif (record["kind"], record["payload"]) != planned_entry(key):
                corrupted += 1
                problems.append(f"acknowledged entry #{entry_id} ({key}) has a different payload")
        first_new = len(before.records)
        if before.tail_record is not None and after.records[first_new : first_new + 1] == [before.tail_record]:
            first_new += 1  # the whole entry a crash left without its line break, now ended by the next append
        new_ids = [r["id"] for r in after.records[first_new:]]
        reuse = sum(1 for entry_id in new_ids if entry_id <= before.max_id) + len(new_ids) - len(set(new_ids))
        self._last_scan = after
        tail_offset = len(after.data) - len(after.tail)
        new_tail = bool(after.tail) and tail_offset not in self.torn_offsets
        if after.tail:
            self.torn_offsets.add(tail_offset)
        return TrialResult(
            mode,
            len(acks),
            lost,
            corrupted,
            reuse,
            new_tail,
            [f"trial {self.trial_number}: {p}" for p in problems],
        )

    def _kill_a_writer(self, writer_id: int) -> tuple[str, list[tuple[int, str]]]:
        """Start a writer, kill it at a moment chosen by the run's random source; return its acknowledgements."""
        process = subprocess.Popen(
            [sys.executable, __file__, "--writer", str(self.path), "--writer-id", str(writer_id)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        acks: list[tuple[int, str]] = []
        ready, large = threading.Event(), threading.Event()
        sizes: list[int] = []

        def read() -> None:
            assert process.stdout is not None
            for raw in process.stdout:
                line = raw.decode().strip()
                if line == "ready":
                    ready.set()
                elif line.startswith("w "):
                    sizes.append(int(line.split()[1]))
                    large.set()
                elif line:
                    entry_id, key = line.split()
                    acks.append((int(entry_id), key))

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        roll = self.rng.random()
        if roll < 0.1:
            mode = "at start"
            time.sleep(self.rng.uniform(0.0, 0.3))
        elif roll < 0.4:
            mode = "random"
            ready.wait(10)
            time.sleep(self.rng.uniform(0.0, 0.25))
        else:
            ready.wait(10)
            time.sleep(self.rng.uniform(0.0, 0.05))
            large.clear()
            large.wait(5)
            if roll < 0.7:
                mode = "during a large append"
                # an append costs about 20 ns per character of payload, the last third of it in write()
                time.sleep(self.rng.uniform(0.0, PAUSE + 25e-9 * (sizes[-1] if sizes else 0)))
            else:
                mode = "mid-write"
                self._wait_for_growth(time.perf_counter() + 1.0)
        process.send_signal(signal.SIGKILL)
        process.wait()
        reader.join(10)
        return mode, acks

    def _wait_for_growth(self, deadline: float) -> None:
        """Return as soon as the tape file grows: the writer is inside its ``write()`` call."""
        size = self.path.stat().st_size if self.path.exists() else 0
        while time.perf_counter() < deadline:
            try:
                if os.stat(self.path).st_size != size:
                    return
            except FileNotFoundError:
                pass

    def _check(self, before: FileScan, after: FileScan, acks: list[tuple[int, str]]) -> list[str]:
        from bub_nb.errors import BubNbError
        from bub_nb.tape import FileTapeStore, open_tape

        problems = []
        if not after.data.startswith(before.data):
            problems.append("bytes written before the trial changed")
        ids = [r["id"] for r in after.records]
        if any(b <= a for a, b in itertools.pairwise(ids)):
            problems.append("ids in the file are not strictly increasing")
        for offset in after.bad_offsets:
            if offset not in self.torn_offsets:
                problems.append(f"an undecodable line at byte {offset} that no crash left behind")
        for record in after.records[len(before.records) :]:  # older lines are checked by the prefix
            key = record["meta"].get("crash")
            if key is None or (record["kind"], record["payload"]) != planned_entry(key):
                problems.append(f"entry #{record['id']} holds something no writer planned")
        scanned_anchors = [(r["id"], r["payload"]["name"]) for r in after.records if r["kind"] == "anchor"]
        for label, store in (("fresh", FileTapeStore(self.directory)), ("warm", self._warm)):
            try:
                tape = open_tape(self.path, store=store)
                entries = tape.read()
                info = tape.info()
                anchors = [(a.id, a.name) for a in tape.anchors(limit=None)]
            except (BubNbError, OSError, ValueError) as exc:
                problems.append(f"{label} store cannot read the tape: {exc!r}")
                continue
            if [e.to_dict() for e in entries] != after.records:
                problems.append(f"{label} store reads other entries than the file holds")
            seen = (info.entries, info.bad_lines, info.torn_tail_bytes)
            expected = (len(after.records), len(after.bad_offsets), len(after.tail))
            if seen != expected:
                problems.append(f"{label} info() reports (entries, bad, torn) {seen}, the file has {expected}")
            if anchors != scanned_anchors:
                problems.append(f"{label} store lists {len(anchors)} anchors, the file has {len(scanned_anchors)}")
        return problems

    def final_append(self) -> list[str]:
        """After the last kill, one more append from a fresh process must take a new id."""
        from bub_nb.tape import FileTapeStore, TapeEntry, open_tape

        before = FileScan.of(self.path)
        tape = open_tape(self.path, store=FileTapeStore(self.directory))
        stored = tape.append(TapeEntry(0, *planned_entry("final:0"), {"crash": "final:0"}))
        return [] if stored.id > before.max_id else [f"the append after the last kill reused id {stored.id}"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rotate-mb", type=float, default=16.0, help="start a new tape past this size")
    parser.add_argument("--keep", type=Path, help="write the tapes here and keep them")
    parser.add_argument("--writer", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--writer-id", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.writer is not None:
        writer(args.writer, args.writer_id)
        return 0
    with tempfile.TemporaryDirectory(prefix="bub-nb-crash-") as scratch:
        directory = args.keep or Path(scratch)
        directory.mkdir(parents=True, exist_ok=True)
        run = CrashRun(directory, seed=args.seed, rotate_bytes=int(args.rotate_mb * 1024 * 1024))

        def progress(done: int, result: TrialResult) -> None:
            if done % 20 == 0 or result.problems:
                print(f"{done}/{args.trials} trials", file=sys.stderr, flush=True)

        summary = run.run(args.trials, progress)
    print(summary.table())
    for problem in summary.problems[:20]:
        print("  problem:", problem)
    failed = summary.lost or summary.corrupted or summary.id_reuse or summary.problems
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
