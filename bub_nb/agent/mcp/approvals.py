"""Answers about the servers of a ``.mcp.json``: asked once per file, server and configuration, kept beside the
tapes, so a changed command, argument, ``env`` entry, ``cwd``, URL or header is asked about again."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bub_nb.agent.mcp.config import ServerSpec

APPROVALS_FILE = "mcp-approvals.json"


class Approvals:
    """Answers about ``.mcp.json`` servers, kept in a JSON file beside the tapes (``<home>/mcp-approvals.json``)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._answers: dict[str, dict[str, Any]] = {}
        if path is not None and path.is_file():
            try:
                loaded = json.loads(path.read_text(encoding="utf-8"))
                self._answers = loaded if isinstance(loaded, dict) else {}
            except (OSError, ValueError):
                self._answers = {}

    def answer(self, spec: ServerSpec) -> bool | None:
        found = self._answers.get(spec.fingerprint())
        return None if found is None else found.get("decision") == "approved"

    def record(self, spec: ServerSpec, approved: bool) -> None:
        self._answers[spec.fingerprint()] = {
            "server": spec.name,
            "origin": spec.origin,
            "command": spec.describe(),
            "approved_as": spec.approval_text(),
            "decision": "approved" if approved else "denied",
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            partial = self.path.with_suffix(".partial")
            partial.write_text(json.dumps(self._answers, indent=1, sort_keys=True), encoding="utf-8")
            os.replace(partial, self.path)
