"""An import report holds the log's values as data: a record type cannot break out of its code span."""

from __future__ import annotations

import json
from pathlib import Path

from harness.hostile_text import markup_problems

from bub_nb.imports import import_log

TYPE = "x` <img src=x onerror=alert(1)> [y](javascript:alert(1)) `"


def test_a_backtick_in_a_record_type_stays_inside_its_code_span(tmp_path: Path) -> None:
    common = {"isSidechain": False, "userType": "external", "cwd": "/tmp", "sessionId": "h1", "version": "2.1.0"}
    records = [
        {**common, "type": "user", "timestamp": "2025-07-01T10:00:00.000Z", "parentUuid": None, "uuid": "u1",
         "message": {"role": "user", "content": [{"type": "text", "text": "hi"}]}},
        {**common, "type": TYPE, "timestamp": "2025-07-01T10:02:00.000Z", "parentUuid": "u1", "uuid": "e1"},
    ]  # fmt: skip
    log = tmp_path / "session`<b>.jsonl"
    log.write_text("\n".join(json.dumps(record) for record in records) + "\n")
    report = import_log(log, "claude-code", home=tmp_path / "home")
    assert report.kept_types == {TYPE: 1}
    html = report._repr_html_()
    assert markup_problems(html) == []
    kept = html.split("<td>kept</td>")[1].split("</td>")[0]
    assert kept.count("<code>") == 1 and "&lt;img src=x onerror=alert(1)&gt;" in kept and "<a" not in kept
    assert "<code>session`&lt;b&gt;.jsonl</code>" in html or "session`&lt;b&gt;.jsonl</code>" in html
