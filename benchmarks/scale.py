"""Tapes at scale: everything that reads a whole 1M-entry tape once, each figure beside its same-run baseline.

- first open of a tape nobody indexed yet, against decoding every line with orjson (target <= 0.15x);
- ``to_frame()`` against ``pandas.read_json(lines=True)`` (target <= 0.35x), printed beside
  ``pandas.read_json(engine="pyarrow")`` and ``polars.read_ndjson`` when the ``bench`` extra is installed,
  and once more in a process that cannot import pyarrow, as the default install runs;
- ``read_tapes()`` over a home of 200 tapes holding the same 1M entries, against ``to_frame()`` of the
  one tape (target <= 1.2x);
- ``search()`` for a rare word that only the oldest entries hold (a whole-tape scan), against decoding
  every line (target <= 0.2x);
- which of a search's 20 newest hits are retracted (``retracted_among``, what the ``tape.search`` tool and
  ``bub-nb mcp serve`` ask), against every retraction on the tape (``retracted()``) (target <= 0.05x);
- peak resident memory of ``to_frame()`` in a fresh process, against the frame's own
  ``memory_usage(deep=True)`` (target <= 2x);
- lean reads: ``read_tapes(kinds=...)`` and ``read_tapes(since=...)`` over the 200-tape home, time and peak
  memory each in a fresh process, against the whole read (target: clearly below 1x).

A figure and its baseline are run in turn, ``--runs`` times each, and the best of each is kept, so both see
the same load; the frames are also timed in CPU seconds, which another process's work on the same cores
moves far less than the clock. The load average is printed before and after.

    python benchmarks/scale.py [--size 1000000] [--runs 2]
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import corpus
from _common import cache_dir, main_at_scale, median_time, ms, timed
from tape import full_read

from bub_nb.tape import FileTapeStore, open_tape, read_tapes

TAPES_IN_HOME = 200
RUNS = 2  # each frame figure and its baseline, in turn
RARE_WORD = "(zone 1)"  # the oldest memory zone's note: a few hundred lines hold "zone", one says this

_FRAME = """
import json, resource, sys, time
if sys.argv[2] == "no-pyarrow":
    sys.modules["pyarrow"] = None  # as the default install runs: pandas keeps its strings in Python
import pandas as pd
import bub_nb.tape.frames.frame
from bub_nb.tape import open_tape
def rss_mb():
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * resource.getpagesize() / 2**20
open_tape(sys.argv[3]).to_frame()  # every import and first-call cost paid on a small tape
tape = open_tape(sys.argv[1])
tape.from_last_anchor()
def timed(call):
    clock, cpu = time.perf_counter(), time.process_time()
    result = call()
    return result, time.perf_counter() - clock, time.process_time() - cpu
before = rss_mb()
frame, ours, ours_cpu = timed(tape.to_frame)
with open("/proc/self/status") as handle:  # this process's own high-water mark (ru_maxrss keeps the parent's)
    peak = next(int(line.split()[1]) for line in handle if line.startswith("VmHWM")) / 1024
deep = frame.memory_usage(deep=True).sum() / 2**20
del frame
pandas, pandas_cpu = timed(lambda: pd.read_json(sys.argv[1], lines=True))[1:]
for _ in range(int(sys.argv[4]) - 1):  # in turn, so both see the same load; the best of each counts
    ours, ours_cpu = (min(pair) for pair in zip((ours, ours_cpu), timed(tape.to_frame)[1:]))
    pandas, pandas_cpu = (
        min(pair) for pair in zip((pandas, pandas_cpu), timed(lambda: pd.read_json(sys.argv[1], lines=True))[1:])
    )
print(json.dumps({"ours": ours, "pandas": pandas, "ours_cpu": ours_cpu, "pandas_cpu": pandas_cpu,
                  "grown": peak - before, "deep": deep}))
"""


def _ratio(ours: float, base: float, digits: int = 2) -> str:
    return f"{ours / base:.{digits}f}x"


def first_open_row(path: Path) -> list[Any]:
    for sidecar in (".idx", ".lock"):
        Path(str(path) + sidecar).unlink(missing_ok=True)
    store = FileTapeStore(path.parent)
    tape = open_tape(path, store=store)
    first = timed(tape.from_last_anchor)
    decode = timed(lambda: full_read(path))
    baseline = f"{ms(decode)} (decode every line)"
    return [f"{_size(path)}: first open, no index", ms(first), baseline, _ratio(first, decode), "<= 0.15x"]


def frame_rows(path: Path, runs: int = RUNS) -> list[list[Any]]:
    label = f"{_size(path)}: to_frame()"
    rows = []
    others = _others(path)
    if others:  # pyarrow is installed (the ``bench`` extra): frame it as such an install does, beside its readers
        import pandas as pd

        open_tape(corpus.cached_tape(10_000)).to_frame()  # imports and first calls, paid once
        tape = open_tape(path)
        tape.from_last_anchor()
        (ours, _), (pandas, _) = in_turn(tape.to_frame, lambda: pd.read_json(path, lines=True), runs)
        baseline = f"{ms(pandas)} (pandas.read_json lines)"
        rows.append([f"{label}, pyarrow installed", ms(ours), baseline, _ratio(ours, pandas), "<= 0.35x"])
        for name, call in others.items():
            seconds = timed(call)
            rows.append([f"{label} vs {name}", ms(ours), ms(seconds), _ratio(ours, seconds), ""])
    done = subprocess.run(
        [sys.executable, "-c", _FRAME, str(path), "no-pyarrow", str(corpus.cached_tape(10_000)), str(runs)],
        capture_output=True,
        text=True,
        check=True,
    )
    got = json.loads(done.stdout)
    baseline = f"{ms(got['pandas'])} (pandas.read_json lines)"
    rows.append(
        [
            f"{label}, default install (no pyarrow)",
            ms(got["ours"]),
            baseline,
            _ratio(got["ours"], got["pandas"]),
            "<= 0.35x",
        ]
    )
    cpu = f"{ms(got['pandas_cpu'])} CPU"
    rows.append(
        [
            f"{label}, default install, CPU time",
            f"{ms(got['ours_cpu'])} CPU",
            cpu,
            _ratio(got["ours_cpu"], got["pandas_cpu"]),
            "",
        ]
    )
    rows.append(
        [
            f"{_size(path)}: to_frame() peak memory, default install",
            f"{got['grown']:.0f} MB",
            f"{got['deep']:.0f} MB (frame memory_usage deep)",
            _ratio(got["grown"], got["deep"]),
            "<= 2x",
        ]
    )
    return rows


def _others(path: Path) -> dict[str, Callable[[], Any]]:
    """The readers an analyst would reach for first, when they are installed (the ``bench`` extra)."""
    import pandas as pd

    others: dict[str, Callable[[], Any]] = {}
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        pass
    else:
        others['pandas.read_json(engine="pyarrow")'] = lambda: pd.read_json(path, lines=True, engine="pyarrow")
    try:
        import polars
    except ImportError:
        pass
    else:
        others["polars.read_ndjson"] = lambda: polars.read_ndjson(path)
    return others


def home_of_many(path: Path, tapes: int) -> Path:
    """A Bub home whose ``tapes`` folder holds the lines of ``path`` split into ``tapes`` tapes (cached)."""
    home = cache_dir(f"home-{path.stem}-{tapes}")
    folder = home / "tapes"
    if not (folder / f"tape-{tapes - 1:04d}.jsonl").exists():
        folder.mkdir(exist_ok=True)
        lines = path.read_bytes().splitlines(keepends=True)
        per = -(-len(lines) // tapes)
        for number in range(tapes):
            (folder / f"tape-{number:04d}.jsonl").write_bytes(b"".join(lines[number * per : (number + 1) * per]))
    return home


def in_turn(first: Callable[[], Any], second: Callable[[], Any], runs: int) -> list[tuple[float, float]]:
    """The best (clock, CPU) seconds of each call, the two run in turn ``runs`` times so both see the same load."""
    best = [(math.inf, math.inf), (math.inf, math.inf)]
    for _ in range(runs):
        for slot, call in enumerate((first, second)):
            clock, cpu = time.perf_counter(), time.process_time()
            call()
            took = (time.perf_counter() - clock, time.process_time() - cpu)
            best[slot] = (min(best[slot][0], took[0]), min(best[slot][1], took[1]))
    return best


def read_tapes_row(path: Path, runs: int = RUNS) -> list[list[Any]]:
    home = home_of_many(path, TAPES_IN_HOME)
    tape = open_tape(path)
    read_tapes(home)  # the first listing of the home's folder is not what is measured
    (one, one_cpu), (many, many_cpu) = in_turn(tape.to_frame, lambda: read_tapes(home), runs)
    label, baseline = f"{_size(path)} in {TAPES_IN_HOME} tapes: read_tapes()", f"{ms(one)} (to_frame() of one tape)"
    return [
        [label, ms(many), baseline, _ratio(many, one), "<= 1.2x"],
        [f"{label}, CPU time", f"{ms(many_cpu)} CPU", f"{ms(one_cpu)} CPU", _ratio(many_cpu, one_cpu), ""],
    ]


_LEAN = """
import json, resource, sys, time
from bub_nb.tape import read_tapes
def rss_mb():
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * resource.getpagesize() / 2**20
read_tapes(sys.argv[2], **json.loads(sys.argv[3]))  # every import and first-call cost paid on a small home
before, clock, cpu = rss_mb(), time.perf_counter(), time.process_time()
frame = read_tapes(sys.argv[1], **json.loads(sys.argv[3]))
clock, cpu = time.perf_counter() - clock, time.process_time() - cpu
with open("/proc/self/status") as handle:  # this process's own high-water mark
    peak = next(int(line.split()[1]) for line in handle if line.startswith("VmHWM")) / 1024
print(json.dumps({"clock": clock, "cpu": cpu, "grown": peak - before, "rows": len(frame)}))
"""


def _lean_read(home: Path, small: Path, options: dict[str, Any], runs: int) -> dict[str, float]:
    """The best clock and CPU seconds and the least peak growth of ``read_tapes(home, **options)``, each run in a
    fresh process so its peak memory is its own."""
    best: dict[str, float] = {}
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-c", _LEAN, str(home), str(small), json.dumps(options)],
            capture_output=True,
            text=True,
            check=True,
        )
        got = json.loads(done.stdout)
        best = {key: min(value, best.get(key, math.inf)) for key, value in got.items()}
    return best


def lean_read_rows(path: Path, runs: int = RUNS) -> list[list[Any]]:
    """``read_tapes(kinds=...)`` and ``read_tapes(since=...)`` over the 200-tape home, against the whole read,
    each in a fresh process: peak memory grown and time (targets: clearly below the whole read)."""
    home, small = home_of_many(path, TAPES_IN_HOME), home_of_many(corpus.cached_tape(10_000), 10)
    entries = int(path.stem.rsplit("-", 1)[1])
    last_tenth = (corpus.START + timedelta(milliseconds=entries * 9 // 10)).isoformat()
    whole = _lean_read(home, small, {}, runs)
    label = f"{_size(path)} in {TAPES_IN_HOME} tapes: read_tapes"
    rows = []
    for name, options in (
        ('kinds=["message"]', {"kinds": ["message"]}),
        ('kinds=["anchor"]', {"kinds": ["anchor"]}),
        ("since=last tenth", {"since": last_tenth}),
        ('kinds=["event"], since=last tenth', {"kinds": ["event"], "since": last_tenth}),
    ):
        lean = _lean_read(home, small, options, runs)
        figure = f"{label}({name}), {lean['rows']:,.0f} of {whole['rows']:,.0f} rows"
        rows.append([f"{figure}: time", ms(lean["clock"]), f"{ms(whole['clock'])} (whole read)",
                     _ratio(lean["clock"], whole["clock"]), "< 1x"])  # fmt: skip
        rows.append([f"{figure}: peak memory", f"{lean['grown']:.0f} MB", f"{whole['grown']:.0f} MB (whole read)",
                     _ratio(lean["grown"], whole["grown"]), "< 1x"])  # fmt: skip
    return rows


def search_row(path: Path) -> list[Any]:
    tape = open_tape(path)
    tape.from_last_anchor()
    found = timed(lambda: tape.search(RARE_WORD, limit=1))
    decode = timed(lambda: full_read(path))
    baseline = f"{ms(decode)} (decode every line)"
    return [f"{_size(path)}: search() rare word", ms(found), baseline, _ratio(found, decode), "<= 0.2x"]


def retracted_row(path: Path) -> list[Any]:
    """Which of the newest hits are retracted: read from the oldest of them on, against the whole tape's."""
    tape = open_tape(path)
    tape.from_last_anchor()
    ids = [entry.id for entry in tape.search("the", limit=20)]
    among = median_time(lambda: tape.retracted_among(ids), runs=5)
    whole = median_time(tape.retracted, runs=5)
    baseline = f"{ms(whole)} (retracted(): the whole tape)"
    return [f"{_size(path)}: retracted_among(20 newest hits)", ms(among), baseline, _ratio(among, whole, 3), "<= 0.05x"]


def _size(path: Path) -> str:
    entries = int(path.stem.rsplit("-", 1)[1])
    return f"{entries // 1_000_000}M" if entries >= 1_000_000 else f"{entries:,}"


def rows(size: int, runs: int = RUNS) -> list[list[Any]]:
    path = corpus.cached_tape(size)
    return [
        first_open_row(path),
        search_row(path),
        retracted_row(path),
        *frame_rows(path, runs),
        *read_tapes_row(path, runs),
        *lean_read_rows(path, runs),
    ]


if __name__ == "__main__":
    main_at_scale(__doc__, rows, RUNS, "runs of each frame figure and its baseline")
