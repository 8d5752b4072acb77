"""The PostgreSQL store beside the file store, on the same machine in the same run.

    python benchmarks/postgres.py            # append latency, from_last_anchor on 1M entries, read_tapes 30 x 10k
    python benchmarks/postgres.py --quick    # a 100k-entry tape instead of 1M
    python benchmarks/postgres.py --class-only   # a teacher's class_overview() of 200 students x 500 entries

It starts its own server in a temporary folder (Debian's ``postgresql`` package). The database
tapes are loaded from the cached benchmark corpus with ``import_entries``, so loading is not what
is timed.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import corpus
from _common import median_time, ms, print_table

from bub_nb.tape import FileTapeStore, open_tape, read_tapes
from bub_nb.testing.postgres import PostgresServer, server_binaries

_LOAD_BATCH = 20_000


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def append_rows(dsn: str, count: int) -> list[list[Any]]:
    from bub_nb.tape.stores.postgres import PostgresTapeStore

    folder = Path(tempfile.mkdtemp(prefix="bub_nb-pg-append-"))
    message = {"role": "user", "content": "a typical question about the code " * 3}
    database = PostgresTapeStore(dsn, schema="appends")
    tapes = {
        "postgres": open_tape("appends", store=database),
        "file": open_tape("appends", store=FileTapeStore(folder)),
    }
    latencies: dict[str, list[float]] = {"postgres": [], "file": []}
    for _ in range(count):  # alternately, so both see the same machine load
        for name, tape in tapes.items():
            started = time.perf_counter()
            tape.append_message(message, run_id="r")
            latencies[name].append(time.perf_counter() - started)
    database.close()
    shutil.rmtree(folder, ignore_errors=True)
    rows = []
    for label, fraction in (("p50", 0.5), ("p99", 0.99)):
        ours, base = _percentile(latencies["postgres"], fraction), _percentile(latencies["file"], fraction)
        rows.append([f"append one entry, {label}", ms(ours), ms(base), f"{ours / base:.1f}x", ""])
    return rows


def _load(store: Any, name: str, path: Path) -> None:
    files = FileTapeStore(path.parent)
    tape = path.name[: -len(".jsonl")]
    last = files.stats(tape).last_id
    for start in range(1, last + 1, _LOAD_BATCH):
        store.import_entries(name, files.read(tape, start, start + _LOAD_BATCH))


def slice_rows(dsn: str, size: int) -> list[list[Any]]:
    from bub_nb.tape.stores.postgres import PostgresTapeStore

    path = corpus.cached_tape(size)
    database = PostgresTapeStore(dsn, schema="slices")
    started = time.perf_counter()
    _load(database, "big", path)
    print(f"  loaded {size:,} entries into PostgreSQL in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    on_database, on_file = open_tape("big", store=database), open_tape(path)
    assert on_database.from_last_anchor() == on_file.from_last_anchor()
    ours = median_time(on_database.from_last_anchor, runs=30)
    base = median_time(on_file.from_last_anchor, runs=30)
    anchors = median_time(lambda: on_database.anchors(limit=20), runs=30)
    anchors_base = median_time(lambda: on_file.anchors(limit=20), runs=30)
    database.close()
    return [
        [f"from_last_anchor, {size:,} entries, warm", ms(ours), ms(base), f"{ours / base:.1f}x", "< 10 ms"],
        [f"anchors(limit=20), {size:,} entries", ms(anchors), ms(anchors_base), f"{anchors / anchors_base:.1f}x", ""],
    ]


def read_tapes_rows(dsn: str, tapes: int, size: int) -> list[list[Any]]:
    from bub_nb.tape.stores.postgres import PostgresTapeStore

    source = corpus.cached_tape(size)
    home = Path(tempfile.mkdtemp(prefix="bub_nb-pg-class-"))
    (home / "tapes").mkdir()
    database = PostgresTapeStore(dsn, schema="class")
    for number in range(tapes):
        shutil.copy(source, home / "tapes" / f"student{number:02d}.jsonl")
        _load(database, f"student{number:02d}", source)
    frames = {}

    def from_database() -> None:
        frames["db"] = read_tapes(store=database)

    def from_files() -> None:
        frames["files"] = read_tapes(home)

    ours = median_time(from_database, runs=3, warmup=1)
    base = median_time(from_files, runs=3, warmup=1)
    assert len(frames["db"]) == len(frames["files"]) == tapes * size
    database.close()
    shutil.rmtree(home, ignore_errors=True)
    label = f"read_tapes, {tapes} tapes x {size:,}"
    return [[label, f"{ours:.2f} s", f"{base:.2f} s", f"{ours / base:.1f}x", ""]]


def load_class(server: Any, students: int = 200, entries: int = 500) -> Any:
    """A class of ``students`` tapes of ``entries`` each from the benchmark corpus: the teacher's store."""
    import psycopg
    from psycopg import sql

    from bub_nb.tape.stores.postgres import PostgresTapeStore
    from bub_nb.tape.stores.postgres.roles import enroll, init_database

    admin = server.create_database("bench_class")
    init_database(admin)
    roles = [f"bench_student{n:03d}" for n in range(students)]
    with psycopg.connect(admin, autocommit=True) as conn:
        for role in [*roles, "bench_teacher"]:
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD 'bench-pw'").format(sql.Identifier(role)))
    enroll(admin, "bench", roles)
    enroll(admin, "bench", ["bench_teacher"], teacher=True)
    template = PostgresTapeStore(admin)
    started = time.perf_counter()
    _load(template, "lesson", corpus.cached_tape(entries))
    template.close()
    with psycopg.connect(admin, autocommit=True) as conn:  # one tape per student, copied by the database's owner
        conn.execute(
            "INSERT INTO bub_nb.tapes (name, owner, notebook, entries, last_id) "
            "SELECT t.name, r, '/home/jovyan/lesson.ipynb', t.entries, t.last_id "
            "FROM bub_nb.tapes t, unnest(%s::name[]) AS r WHERE t.owner = current_user",
            (roles,),
        )
        conn.execute(
            "INSERT INTO bub_nb.entries (tape, id, kind, payload, meta, date, line, pushed) "
            "SELECT s.key, e.id, e.kind, e.payload, e.meta, e.date, e.line, e.pushed FROM bub_nb.entries e "
            "JOIN bub_nb.tapes t ON t.key = e.tape AND t.owner = current_user "
            "JOIN bub_nb.tapes s ON s.name = t.name AND s.owner <> current_user"
        )
        conn.execute("ANALYZE")
    print(f"  loaded {students} x {entries} entries in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return PostgresTapeStore(server.dsn("bench_teacher", "bench-pw", "bench_class"), migrate_schema=False)


class _TapeByTape:
    """A store that reads its tapes one by one, as every store did before a database read a class in one query:
    the baseline of the teacher's lean read (everything but ``class_lines`` is the database store's)."""

    def __init__(self, store: Any) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        if name == "class_lines":
            raise AttributeError(name)
        return getattr(self._store, name)


def class_rows(server: Any, students: int = 200, entries: int = 500) -> list[list[Any]]:
    """A teacher's ``class_overview()`` and ``read_tapes(store=...)`` of ``students`` tapes of ``entries`` each,
    beside reading every tape one by one."""
    from bub_nb import class_overview

    teacher = load_class(server, students, entries)
    frames = {}

    def overview() -> None:
        frames["overview"] = class_overview(teacher)

    def tape_by_tape() -> None:
        frames["entries"] = read_tapes(store=_TapeByTape(teacher))

    def whole() -> None:
        frames["whole"] = read_tapes(store=teacher)

    since = "2026-01-01T00:00:00.250+00:00"  # the corpus dates its entries a millisecond apart: half a tape

    def lean() -> None:
        frames["lean"] = read_tapes(store=teacher, kinds=["message"], since=since)

    base = median_time(tape_by_tape, runs=3, warmup=1)
    ours = median_time(overview, runs=5, warmup=1)
    read = median_time(whole, runs=3, warmup=1)
    picked = median_time(lean, runs=3, warmup=1)
    assert len(frames["overview"]) == students and len(frames["entries"]) == students * entries
    assert len(frames["whole"]) == students * entries and set(frames["overview"]["owner"]) == set(
        frames["whole"]["owner"]
    )
    everything = frames["whole"]
    expected = everything[(everything["kind"] == "message") & (everything["date"] >= since)]
    assert len(frames["lean"]) == len(expected)
    teacher.close()
    label = f"teacher, {students} students x {entries}"
    baseline = "read tape by tape"
    return [
        [f"class_overview(), {label}", f"{ours:.3f} s", f"{base:.2f} s", f"{ours / base:.2f}x", f"< 1 s ({baseline})"],
        [f"read_tapes(store=), {label}", f"{read:.3f} s", f"{base:.2f} s", f"{read / base:.2f}x", f"({baseline})"],
        [f"read_tapes(store=, kinds=, since=), {label}", f"{picked:.3f} s", f"{base:.2f} s", f"{picked / base:.2f}x",
         f"< 1 s ({baseline})"],
    ]  # fmt: skip


def rows(*, size: int = 1_000_000, appends: int = 2000, tapes: int = 30, tape_size: int = 10_000) -> list[list[Any]]:
    """Every database figure beside its file-store baseline; none when the server binaries are missing."""
    if server_binaries() is None:
        print("  (PostgreSQL server binaries not installed: database figures skipped)", file=sys.stderr)
        return []
    with PostgresServer() as server:
        dsn = server.dsn()
        figures = append_rows(dsn, appends) + slice_rows(dsn, size) + read_tapes_rows(dsn, tapes, tape_size)
        return figures + class_rows(server)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a 100k-entry tape instead of 1M")
    parser.add_argument("--appends", type=int, default=2000)
    parser.add_argument("--class-only", action="store_true", help="only the teacher's overview of 200 students")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    if args.class_only:
        with PostgresServer() as server:
            table = class_rows(server)
    else:
        table = rows(size=100_000 if args.quick else 1_000_000, appends=args.appends)
    print_table(["figure (PostgreSQL)", "postgres", "baseline", "ratio", "target"], table)
    print(f"\n{len(table)} figures in {time.perf_counter() - started:.0f} s; median of warm runs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
