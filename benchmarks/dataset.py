"""A home's tapes exported as a Parquet dataset by day and tape: the first export, an incremental one and one with
nothing new, beside writing one Parquet file per tape (``bub-nb tapes export --parquet``), and the read back.

- the home ``frames.py`` builds (``--tapes`` tapes of ``--steps`` steps, written as Bub and bub_nb write them);
- the first ``export_dataset``: time, files and bytes;
- ``--grow`` tapes given ``--entries`` new entries each, then the incremental export; then one with nothing new;
- ``write_parquet`` of the same tapes (a file per tape, written whole each time) as the baseline;
- ``read_tapes(dataset=...)`` beside ``read_tapes(home)``.

    python benchmarks/dataset.py [--tapes 200] [--steps 60] [--grow 20] [--entries 10]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

from _common import print_table
from frames import build_home

from bub_nb.tape import open_tape, read_tapes
from bub_nb.tape.frames.dataset import export_dataset
from bub_nb.tape.frames.saved import write_parquet
from bub_nb.tape.stores.resolve import file_store


def _size(folder: Path) -> tuple[int, int]:
    files = [path for path in folder.rglob("*.parquet")]
    return len(files), sum(path.stat().st_size for path in files)


def _clock(call: object) -> tuple[float, object]:
    started = time.perf_counter()
    result = call()  # type: ignore[operator]
    return time.perf_counter() - started, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tapes", type=int, default=200)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--grow", type=int, default=20)
    parser.add_argument("--entries", type=int, default=10)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")  # the home holds bad bytes on purpose
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        home = root / "home"
        build_home(home, args.tapes, args.steps)
        names = file_store(home / "tapes").list_tapes()
        entries = len(read_tapes(home))
        jsonl = sum(path.stat().st_size for path in (home / "tapes").glob("*.jsonl"))
        print(f"  home: {len(names)} tapes, {entries} entries, {jsonl / 1e6:.1f} MB of JSON Lines", file=sys.stderr)
        rows = []
        seconds, done = _clock(lambda: export_dataset(root / "ds", home))
        files, size = _size(root / "ds")
        rows.append(["--dataset: first export", f"{seconds:.2f} s", files, f"{size / 1e6:.1f} MB", done.rows])
        for name in names[: args.grow]:
            tape = open_tape(name, home=home, create=False)
            for number in range(args.entries):
                tape.append_message({"role": "user", "content": f"the next day, {number}"})
        seconds, done = _clock(lambda: export_dataset(root / "ds", home))
        added = sum(path.stat().st_size for path in done.files)
        rows.append(
            [
                f"--dataset: {args.grow} tapes grown",
                f"{seconds:.2f} s",
                len(done.files),
                f"+{added / 1e3:.0f} kB",
                done.rows,
            ]
        )
        seconds, done = _clock(lambda: export_dataset(root / "ds", home))
        rows.append(["--dataset: nothing new", f"{seconds:.2f} s", 0, "", done.rows])
        copy = root / "copy"  # the baseline on a copy: write_parquet records an export event on each tape
        shutil.copytree(home, copy)
        seconds, _ = _clock(lambda: write_parquet([open_tape(n, home=copy, create=False) for n in names], root / "pq"))
        files, size = _size(root / "pq")
        rows.append(["--parquet: a file per tape (baseline)", f"{seconds:.2f} s", files, f"{size / 1e6:.1f} MB", ""])
        print_table(["export", "time", "files", "size", "rows"], rows)
        home_read, _ = _clock(lambda: read_tapes(home))
        dataset_read, _ = _clock(lambda: read_tapes(dataset=root / "ds"))
        print_table(
            ["read", "time", "ratio"],
            [
                ["read_tapes(home)", f"{home_read:.2f} s", ""],
                ["read_tapes(dataset=...)", f"{dataset_read:.2f} s", f"{dataset_read / home_read:.2f}x"],
            ],
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
