"""Claude Code and Codex, the real CLIs, writing their own logs against the scripted endpoint in ``cli_endpoint``
(and MCP's reference server, ``mcp-server-everything``, installed beside them from the same pins).

The versions are pinned in ``.ci/clis/package-lock.json``; ``.ci/run`` installs them once per lock into
``${BUB_NB_CACHE:-~/.cache/bub_nb}/clis/<hash>`` and names that folder in ``BUB_NB_CLIS``. Without them a test
skips (fails under ``CI=true``) with the line that installs them. Each run gets a fresh ``HOME`` (and
``CODEX_HOME``) in a temporary folder, so the logs land where a user's would, under that home.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness.cli_endpoint import CliEndpoint, Respond

PINS = Path(__file__).resolve().parents[2] / ".ci" / "clis"
"""``package.json`` and ``package-lock.json``: the tested versions of the CLIs, in one place."""

TIMEOUT = 180
"""Seconds one CLI run may take before the test gives up on it (a hung CLI, not a slow machine)."""


def cli_folder() -> Path:
    """Where ``.ci/run`` installs the pinned CLIs: ``BUB_NB_CLIS``, or the cache folder named by the pins' hash."""
    if os.environ.get("BUB_NB_CLIS"):
        return Path(os.environ["BUB_NB_CLIS"])
    pins = (PINS / "package.json").read_bytes() + (PINS / "package-lock.json").read_bytes()
    cache = Path(os.environ.get("BUB_NB_CACHE") or Path.home() / ".cache" / "bub_nb")
    return cache / "clis" / hashlib.sha256(pins).hexdigest()[:16]


def cli_binary(name: str) -> Path:
    """The pinned ``claude``, ``codex`` or ``mcp-server-everything``; skips without it, and fails under ``CI=true``."""
    binary = cli_folder() / "node_modules" / ".bin" / name
    if not binary.exists():
        reason = f"{name} is not installed at {binary}; run the CLI step of .ci/run (npm install --no-save in .ci/clis)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return binary


def pinned_version(package: str) -> str:
    return str(json.loads((PINS / "package.json").read_text())["dependencies"][package])


@dataclass
class CliRun:
    """One CLI run: what it printed, and its exit status."""

    stdout: str
    stderr: str
    returncode: int


@dataclass
class CliHome:
    """A temporary ``HOME`` for one CLI, beside the folder it works in, talking to ``endpoint``."""

    home: Path
    work: Path
    endpoint: CliEndpoint

    def run(self, args: list[str], env: dict[str, str]) -> CliRun:
        done = subprocess.run(
            args,
            cwd=self.work,
            env={"PATH": os.environ["PATH"], "HOME": str(self.home), "LANG": "C.UTF-8", **env},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
        return CliRun(done.stdout, done.stderr, done.returncode)

    # -- Claude Code -------------------------------------------------------------------------------

    def claude(self, prompt: str, *more: str, allow: str = "Bash", bypass: bool = True) -> dict[str, Any]:
        """``claude -p PROMPT --output-format json``; returns the JSON it prints (its own account of the run).

        ``allow`` is ``--allowedTools``; ``bypass=False`` leaves out ``--dangerously-skip-permissions``, so only the
        allowed tools run, as for a user who allowed them."""
        args = ["-p", prompt, "--output-format", "json", "--allowedTools", allow]
        args += ["--dangerously-skip-permissions"] if bypass else []
        run = self.claude_command(*args, *more)
        assert run.returncode == 0, f"claude exited {run.returncode}: {run.stderr[-2000:]}"
        return dict(json.loads(run.stdout))

    def claude_command(self, *args: str) -> CliRun:
        """``claude ARGS...`` offline against the endpoint (``claude mcp add ...``, say)."""
        env = {
            "ANTHROPIC_BASE_URL": self.endpoint.url,
            "ANTHROPIC_API_KEY": "dummy",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "IS_SANDBOX": "1",  # lets --dangerously-skip-permissions run as root
        }
        return self.run([str(cli_binary("claude")), *args], env)

    def claude_settings(self, settings: dict[str, Any]) -> None:
        """``~/.claude/settings.json`` (hooks, say)."""
        (self.home / ".claude").mkdir(parents=True, exist_ok=True)
        (self.home / ".claude" / "settings.json").write_text(json.dumps(settings))

    def claude_logs(self) -> list[Path]:
        """The session transcripts, ``~/.claude/projects/<folder>/<session>.jsonl`` (sub-agents' files excluded)."""
        return sorted((self.home / ".claude" / "projects").glob("*/*.jsonl"))

    def claude_subagent_logs(self) -> list[Path]:
        return sorted((self.home / ".claude" / "projects").glob("*/*/subagents/agent-*.jsonl"))

    # -- Codex -------------------------------------------------------------------------------------

    def codex_config(self, **settings: Any) -> None:
        """``$CODEX_HOME/config.toml`` with a provider at the endpoint, speaking the Responses API."""
        lines = ['model = "gpt-test"', 'model_provider = "local"']
        lines += [f"{key} = {json.dumps(value)}" for key, value in settings.items()]
        lines += [
            "[model_providers.local]", 'name = "local"', f'base_url = "{self.endpoint.url}/v1"',
            'wire_api = "responses"', 'env_key = "BUB_NB_TEST_KEY"',
        ]  # fmt: skip
        (self.home / ".codex").mkdir(parents=True, exist_ok=True)
        (self.home / ".codex" / "config.toml").write_text("\n".join(lines) + "\n")

    def codex(self, prompt: str) -> CliRun:
        """``codex exec PROMPT`` with no sandbox and no approvals; returns what it printed."""
        args = [str(cli_binary("codex")), "exec", "--skip-git-repo-check"]
        args += ["--dangerously-bypass-approvals-and-sandbox", prompt]
        run = self.run(args, {"CODEX_HOME": str(self.home / ".codex"), "BUB_NB_TEST_KEY": "dummy"})
        assert run.returncode == 0, f"codex exited {run.returncode}: {run.stderr[-2000:]}"
        return run

    def codex_logs(self) -> list[Path]:
        """The rollouts, ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl``."""
        return sorted((self.home / ".codex" / "sessions").glob("*/*/*/rollout-*.jsonl"))


@contextmanager
def cli_home(tmp: Path, respond: Respond) -> Iterator[CliHome]:
    """A fresh home and work folder under ``tmp``, and the endpoint answering with ``respond``."""
    home, work = tmp / "home", tmp / "work"
    home.mkdir()
    work.mkdir()
    with CliEndpoint(respond) as endpoint:
        yield CliHome(home, work, endpoint)
