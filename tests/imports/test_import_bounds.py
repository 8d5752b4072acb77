"""Importing a log is bounded in memory: a value of a logs.db longer than the bound (a generated
``zeroblob(400000000)``, a text of millions of characters) is cut inside SQLite, marked, and counted in the report."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

from harness.logs import DATA

from bub_nb import import_log, open_tape
from bub_nb.imports.records import MAX_VALUE, connect, rows


def hostile_logs(tmp_path: Path) -> Path:
    """llm's own 0.29 logs.db, with a 400 MB blob and a text past the bound generated on every response row."""
    path = tmp_path / "logs.db"
    shutil.copy(DATA / "llm" / "logs-0.29.db", path)
    with closing(sqlite3.connect(path)) as db:
        db.execute("ALTER TABLE responses ADD COLUMN huge BLOB GENERATED ALWAYS AS (zeroblob(400000000)) VIRTUAL")
        db.execute(
            "ALTER TABLE responses ADD COLUMN long TEXT "
            f"GENERATED ALWAYS AS (printf('%.*c', {MAX_VALUE + 10}, 'x')) VIRTUAL"
        )
        db.commit()
    assert path.stat().st_size < 1_000_000  # a small file: the values are made when read
    return path


def test_a_huge_generated_value_is_cut_with_a_marker_and_counted(tmp_path: Path) -> None:
    report = import_log(hostile_logs(tmp_path), home=tmp_path / "home")
    assert report.session["cut_values"] == 6  # two columns of three responses
    assert "6 values too long to bring in whole were cut" in report.describe()
    text = json.dumps([e.to_dict() for e in open_tape(report.tape, home=tmp_path / "home").read()])
    assert len(text) < MAX_VALUE  # neither value reached the tape whole
    with closing(connect(tmp_path / "logs.db")) as db:
        row = rows(db, "SELECT * FROM responses ORDER BY id")[0]
        assert row["huge"] == "[cut: 400,000,000 bytes in the log, over 4,194,304]"
        assert row["long"].startswith("x" * 1000) and row["long"].endswith(
            f"…[cut: {MAX_VALUE + 10:,} characters in the log, over {MAX_VALUE:,}]"
        )
        assert len(row["long"]) < MAX_VALUE + 100 and db.cut == 6  # every row read so far counted


def test_the_import_of_a_400_mb_blob_stays_far_below_its_size_in_memory(tmp_path: Path) -> None:
    logs = hostile_logs(tmp_path)
    program = (
        "import re\n"
        "from bub_nb import import_log\n"
        f"import_log({str(logs)!r}, home={str(tmp_path / 'home')!r})\n"
        # VmHWM is this program's own peak: ru_maxrss may carry the forking test process's across exec.
        "print(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1))\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    peak_kib = int(done.stdout.split()[-1])
    assert peak_kib < 300_000, f"the import peaked at {peak_kib:,} KiB"
