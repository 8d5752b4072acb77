"""Importing another agent's log: records per second, against decoding its lines and appending as many entries.

    python benchmarks/imports.py               # Claude Code and Codex logs of 10k and 100k records
    python benchmarks/imports.py --records 1000000

The logs repeat the records of the shipped samples (tests/data/imports), each copy with fresh ids, so a
tool call keeps its result. The baselines, measured in the same run: ``decode`` reads every line with orjson
and nothing else; ``append`` writes as many entries as the import wrote, built beforehand, with one
``Tape.extend``. An import does both and maps each record; its ratio to their sum is the mapping's cost.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import orjson
from _common import print_table

from bub_nb import import_log, open_tape
from bub_nb.tape import TapeEntry

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "imports"
SAMPLES = {
    "claude-code": DATA / "claude-code" / "sidechain_integrated.jsonl",
    "codex": DATA / "codex" / "rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl",
}


def build_log(sample: Path, records: int, path: Path) -> Path:
    """``records`` lines: the sample's lines over and over, ids made unique per copy."""
    lines = sample.read_bytes().splitlines()
    with path.open("wb") as handle:
        for copy in range(records // len(lines) + 1):
            for line in lines[: max(0, min(len(lines), records - copy * len(lines)))]:
                for prefix in (b'"toolu_', b'"call-'):  # call ids, unique per copy
                    line = line.replace(prefix, prefix + f"{copy}_".encode())
                handle.write(line + b"\n")
    return path


def measure(format: str, records: int, folder: Path) -> list[str]:
    log = build_log(SAMPLES[format], records, folder / f"{format}-{records}.jsonl")
    started = time.perf_counter()
    decoded = [orjson.loads(line) for line in log.read_bytes().splitlines() if line.strip()]
    decode = time.perf_counter() - started
    home = folder / f"home-{format}-{records}"
    started = time.perf_counter()
    report = import_log(log, format, name="imported", home=home)
    imported = time.perf_counter() - started
    entries = open_tape("imported", home=home).read()
    copies = [TapeEntry(0, e.kind, e.payload, e.meta, e.date) for e in entries]
    started = time.perf_counter()
    open_tape("appended", home=home).extend(copies)
    append = time.perf_counter() - started
    assert report.mapped + report.kept == report.records == len(decoded)
    return [
        format, f"{records:,}", f"{report.entries:,}", f"{imported:.2f} s", f"{records / imported:,.0f}",
        f"{decode:.2f} s", f"{append:.2f} s", f"{imported / (decode + append):.1f}×",
    ]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, nargs="*", default=[10_000, 100_000])
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        rows = [measure(format, size, Path(folder)) for size in args.records for format in SAMPLES]
    headers = ["log", "records", "entries", "import", "records/s", "decode", "append", "import ÷ (decode + append)"]
    print_table(headers, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
