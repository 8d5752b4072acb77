"""The ``bub-nb`` command on a terminal: control characters from content are printed as markers, never raw."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from harness.hostile_text import CONTROL_CHARACTERS

ESCAPES = "\x1b]52;c;cHduZWQ=\x07\x1b[2K\x1b[1A\r\x9b31m\x00\x7f"


def test_the_cli_prints_no_raw_control_character_from_a_log(tmp_path: Path) -> None:
    common = {"isSidechain": False, "userType": "external", "cwd": "/tmp", "sessionId": "h1", "version": "2.1.0"}
    records = [
        {**common, "type": "user", "timestamp": "2025-07-01T10:00:00.000Z", "parentUuid": None, "uuid": "u1",
         "message": {"role": "user", "content": [{"type": "text", "text": "hi"}]}},
        {**common, "type": f"odd{ESCAPES}", "timestamp": "2025-07-01T10:02:00.000Z", "parentUuid": "u1",
         "uuid": "e1"},
    ]  # fmt: skip
    log = tmp_path / "session.jsonl"
    log.write_text("\n".join(json.dumps(record) for record in records) + "\n")
    done = subprocess.run(
        [sys.executable, "-m", "bub_nb.cli", "tapes", "import", str(log), "--format", "claude-code", "--name", "odd",
         "--home", str(tmp_path / "home")],
        capture_output=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    printed = (done.stdout + done.stderr).decode()
    assert "odd␛]52;c;cHduZWQ=␇␛[2K␛[1A␍\\x9b31m␀␡" in printed
    raw = sorted({repr(c) for c in printed} & {repr(c) for c in CONTROL_CHARACTERS})
    assert raw == []
