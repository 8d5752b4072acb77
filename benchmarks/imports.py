"""Importing another agent's log: records per second, against decoding its lines and appending as many entries.

    python benchmarks/imports.py               # Claude Code and Codex logs of 10k and 100k records
    python benchmarks/imports.py --records 1000000

The logs repeat the records of a session, each copy with fresh ids, so a tool call keeps its result and a
reply's records stay one reply. Two sessions per format: the shipped samples (tests/data/imports), and the
session the real CLIs write in ``tests/integration/test_real_clis.py`` (the pinned Claude Code and Codex run
once against the scripted local endpoint of ``tests/harness``; skipped, with a line, when they are not
installed). The baselines, measured in the same run: ``decode`` reads every line with orjson
and nothing else; ``append`` writes as many entries as the import wrote, built beforehand, with one
``Tape.extend``. An import does both and maps each record; its ratio to their sum is the mapping's cost.
"""

from __future__ import annotations

import argparse
import re
import sys
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


ID_PREFIXES = (b'"toolu_', b'"call-', b'"call_', b'"msg_', b'"req_')
"""Call, reply and request ids: unique per copy of a session."""


def real_logs(folder: Path) -> dict[str, Path]:
    """The logs the pinned CLIs write for the real-CLI tests' sessions (none when they are not installed)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from harness.cli_sessions import claude_reply, claude_session_runs, codex_reply, codex_session_run
    from harness.clis import cli_folder, cli_home

    if not (cli_folder() / "node_modules" / ".bin" / "claude").exists():
        print(f"The CLIs are not installed at {cli_folder()} (see .ci/run): only the shipped samples are measured")
        return {}
    (folder / "claude").mkdir()
    (folder / "codex").mkdir()
    with cli_home(folder / "claude", claude_reply) as cli:
        claude_session_runs(cli)
        [claude] = cli.claude_logs()
    with cli_home(folder / "codex", codex_reply) as cli:
        codex_session_run(cli)
        [codex] = cli.codex_logs()
    return {"claude-code (real CLI)": claude, "codex (real CLI)": codex}


def build_log(sample: Path, records: int, path: Path) -> Path:
    """``records`` lines: the sample's lines over and over, ids made unique per copy."""
    lines = [line for line in sample.read_bytes().splitlines() if line.strip()]
    with path.open("wb") as handle:
        for copy in range(records // len(lines) + 1):
            for line in lines[: max(0, min(len(lines), records - copy * len(lines)))]:
                for prefix in ID_PREFIXES:
                    line = line.replace(prefix, prefix + f"{copy}_".encode())
                handle.write(line + b"\n")
    return path


def measure(label: str, sample: Path, records: int, folder: Path) -> list[str]:
    format, slug = label.split()[0], "-".join(re.findall(r"[a-z]+", label))
    folder.mkdir(exist_ok=True)
    log = build_log(sample, records, folder / f"{slug}-{records}.jsonl")
    started = time.perf_counter()
    decoded = [orjson.loads(line) for line in log.read_bytes().splitlines() if line.strip()]
    decode = time.perf_counter() - started
    home = folder / f"home-{slug}-{records}"
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
        label, f"{records:,}", f"{report.entries:,}", f"{imported:.2f} s", f"{records / imported:,.0f}",
        f"{decode:.2f} s", f"{append:.2f} s", f"{imported / (decode + append):.1f}×",
    ]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, nargs="*", default=[10_000, 100_000])
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        samples = {**SAMPLES, **real_logs(Path(folder))}
        rows = [
            measure(label, sample, size, Path(folder) / f"{size}")
            for size in args.records
            for label, sample in samples.items()
        ]
    headers = ["log", "records", "entries", "import", "records/s", "decode", "append", "import ÷ (decode + append)"]
    print_table(headers, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
