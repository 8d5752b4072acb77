"""A ``.mcp.json`` approval shows and covers the whole start of a server: program, arguments, folder and every
``env`` entry. Changing any of them after an approval asks again, so an added ``PYTHONPATH`` cannot swap the
program in under a kept answer."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from bub_nb.agent.mcp import Approvals, McpServers, read_mcp_json

pytest.importorskip("mcp")

TIME = {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}


def asked_after(tmp_path: Path, entry: dict[str, Any]) -> list[str]:
    """The approval texts shown for ``entry`` written to ``.mcp.json``, with the answers kept from before."""
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"t": entry}}))
    shown: list[str] = []

    def ask(spec: Any) -> bool:
        shown.append(spec.approval_text())
        return False  # denied: nothing starts, and the answer is kept

    McpServers(read_mcp_json(tmp_path), approvals=Approvals(tmp_path / "home" / "mcp-approvals.json"), ask=ask).tools()
    return shown


@pytest.mark.parametrize(
    "change",
    [
        {"env": {"TZ": "UTC", "PYTHONPATH": "/tmp/planted"}},
        {"env": {"TZ": "UTC", "LD_PRELOAD": "/tmp/planted.so"}},
        {"env": {"TZ": "Europe/Paris"}},
        {"env": {"TZ": "UTC", "DYLD_INSERT_LIBRARIES": "/tmp/x.dylib"}},
        {"cwd": "elsewhere"},
        {"args": [*TIME["args"], "--verbose"]},
    ],
)
def test_a_kept_answer_is_asked_again_when_env_cwd_or_args_change(tmp_path: Path, change: dict[str, Any]) -> None:
    (tmp_path / "elsewhere").mkdir()
    first = {**TIME, "env": {"TZ": "UTC"}}
    assert len(asked_after(tmp_path, first)) == 1
    assert asked_after(tmp_path, first) == []  # the answer is kept
    again = asked_after(tmp_path, {**first, **change})
    assert len(again) == 1


def test_the_approval_shows_every_env_entry_and_cwd_and_flags_what_changes_the_program(tmp_path: Path) -> None:
    env = {"TZ": "UTC", "PYTHONPATH": "/tmp/planted", "NODE_OPTIONS": "--require /tmp/x.js", "API_TOKEN": "s3cr3t-v"}
    (shown,) = asked_after(tmp_path, {**TIME, "env": env, "cwd": "/srv/tools"})
    lines = shown.splitlines()
    assert lines[0] == f"command: {sys.executable}"
    assert "arg 1: -m" in lines and "cwd: /srv/tools" in lines
    assert "env TZ=UTC" in lines
    assert any(line.startswith("env PYTHONPATH=/tmp/planted") and "changes which program" in line for line in lines)
    assert any(line.startswith("env NODE_OPTIONS=") and "changes which program" in line for line in lines)
    assert "s3cr3t-v" not in shown and "env API_TOKEN=<8 characters, not shown>" in lines
