"""The Arrow path at scale: ``to_arrow()`` of the 1M-entry tape against the fastest JSON readers, a home of
200 tapes as one Arrow table, and the turn and tool-call tables beside ``to_frame()``.

- ``Tape.to_arrow()`` against ``polars.read_ndjson`` of the same file (target <= 1.0x), printed beside
  ``pyarrow.json.read_json`` and DuckDB's ``read_json`` when they read the file at all;
- ``read_tapes(as_="arrow")`` over the 200-tape home against ``to_arrow()`` of the one tape (target <= 1.2x);
- ``df.tape.runs()`` and ``df.tape.tool_calls()`` of the 1M tape's frame, beside ``to_frame()`` itself.

Each figure and its baseline run in turn, ``--runs`` times, the best of each kept (CPU seconds beside the
clock: the machine may be shared). The load average is printed before and after.

    python benchmarks/arrow.py [--size 1000000] [--runs 3]
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import corpus
from _common import main_at_scale, ms, timed
from scale import TAPES_IN_HOME, _ratio, _size, home_of_many, in_turn

from bub_nb.tape import open_tape, read_tapes

RUNS = 3


def _readers(path: Path) -> dict[str, Callable[[], Any]]:
    """The JSON readers an analyst would compare with, those that are installed."""
    readers: dict[str, Callable[[], Any]] = {}
    try:
        import pyarrow.json
    except ImportError:
        pass
    else:
        readers["pyarrow.json.read_json"] = lambda: pyarrow.json.read_json(path)
    try:
        import duckdb
    except ImportError:
        pass
    else:
        query = f"SELECT * FROM read_json('{path}', format='newline_delimited')"
        readers["duckdb read_json"] = lambda: _whole_table(duckdb.sql(query))
    return readers


def _whole_table(relation: Any) -> Any:
    """A DuckDB result as a whole Arrow table: newer DuckDB's ``arrow()`` is a lazy batch reader."""
    if hasattr(relation, "to_arrow_table"):
        return relation.to_arrow_table()
    result = relation.arrow()
    return result.read_all() if hasattr(result, "read_all") else result


def to_arrow_rows(path: Path, runs: int = RUNS) -> list[list[Any]]:
    import polars

    tape = open_tape(path)
    tape.from_last_anchor()
    open_tape(corpus.cached_tape(10_000)).to_arrow()  # imports and first calls, paid once
    (ours, ours_cpu), (base, base_cpu) = in_turn(tape.to_arrow, lambda: polars.read_ndjson(path), runs)
    label = f"{_size(path)}: to_arrow()"
    rows = [
        [label, ms(ours), f"{ms(base)} (polars.read_ndjson)", _ratio(ours, base), "<= 1.0x"],
        [f"{label}, CPU time", f"{ms(ours_cpu)} CPU", f"{ms(base_cpu)} CPU", _ratio(ours_cpu, base_cpu), ""],
    ]
    for name, call in _readers(path).items():
        try:
            (ours, _), (seconds, _) = in_turn(tape.to_arrow, call, runs)
        except Exception as error:  # a reader that cannot read a tape says so in the table
            rows.append([f"{label} vs {name}", "", f"fails: {type(error).__name__}: {str(error)[:60]}", "", ""])
            continue
        rows.append([f"{label} vs {name}", ms(ours), ms(seconds), _ratio(ours, seconds), ""])
    return rows


def read_tapes_row(path: Path, runs: int = RUNS) -> list[list[Any]]:
    home = home_of_many(path, TAPES_IN_HOME)
    tape = open_tape(path)
    read_tapes(home, as_="arrow")  # the first listing of the home's folder is not what is measured
    (one, _), (many, _) = in_turn(tape.to_arrow, lambda: read_tapes(home, as_="arrow"), runs)
    label = f"{_size(path)} in {TAPES_IN_HOME} tapes: read_tapes(as_='arrow')"
    return [[label, ms(many), f"{ms(one)} (to_arrow() of one tape)", _ratio(many, one), "<= 1.2x"]]


def table_rows(path: Path, runs: int = RUNS) -> list[list[Any]]:
    tape = open_tape(path)
    clock = time.perf_counter()
    frame = tape.to_frame()
    framed = time.perf_counter() - clock
    rows = []
    for name in ("runs", "tool_calls"):
        helper = getattr(frame.tape, name)
        best = min(timed(helper) for _ in range(runs))
        count = len(helper())
        rows.append(
            [f"{_size(path)}: df.tape.{name}() ({count:,} rows)", ms(best), f"{ms(framed)} (to_frame())",
             _ratio(best, framed), ""]
        )  # fmt: skip
    return rows


def rows(size: int, runs: int = RUNS) -> list[list[Any]]:
    path = corpus.cached_tape(size)
    return [*to_arrow_rows(path, runs), *read_tapes_row(path, runs), *table_rows(path, runs)]


if __name__ == "__main__":
    main_at_scale(__doc__, rows, RUNS, "runs of each figure and its baseline")
