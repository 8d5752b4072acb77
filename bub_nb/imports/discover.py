"""``discover_logs``: the Claude Code, Codex and llm logs of this user, found where the tools keep them, imported once.

The places are each tool's defaults: Claude Code's ``~/.claude/projects/**/*.jsonl`` (``$CLAUDE_CONFIG_DIR``
moves ``~/.claude``), Codex's ``~/.codex/sessions/**/rollout-*.jsonl`` (``$CODEX_HOME`` moves ``~/.codex``) and
llm's ``logs.db`` in its user folder (``$LLM_USER_PATH``, else ``~/.config/io.datasette.llm`` on Linux,
``~/Library/Application Support/io.datasette.llm`` on macOS, ``%APPDATA%\\io.datasette.llm`` on Windows).

What was imported is noted in ``imported_logs.json`` beside the tapes (a file Bub ignores): each log's size and
modification time, and its tape. A log that has not changed since is left alone, so a second run imports
nothing. A log that has changed (a session resumed, a new prompt in llm's database) is imported again whole
and replaces its tape, the earlier import archived as a reset archives a tape: its records are read again
because a grown log may change what was already imported (Claude Code rewrites a reply's token count in the
records it adds; llm's database is rows, not an append-only file), and a whole import keeps every record
accounted for.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import orjson

from bub_nb.errors import BubNbError, LogImportError
from bub_nb.imports.draft import SOURCE
from bub_nb.imports.importer import import_log
from bub_nb.imports.report import ImportReport
from bub_nb.tape.locations import tapes_home

LEDGER: Final = "imported_logs.json"
"""The file beside the tapes that notes every log imported so far."""
TOOLS: Final = ("claude-code", "codex", "llm")
"""The tools whose logs are looked for, each named as its import format."""


@dataclass(frozen=True, slots=True)
class FoundLog:
    """One log a tool wrote where it keeps its logs: ``tool`` is its import format."""

    tool: str
    path: Path


@dataclass(frozen=True, slots=True)
class DiscoveryReport:
    """What a discovery did: the logs it ``imported`` (new ones and changed ones, each with its import's report),
    how many were ``unchanged`` since the last run, and the logs it could not import, each with why."""

    found: int
    imported: tuple[ImportReport, ...] = ()
    unchanged: int = 0
    failed: tuple[tuple[str, str], ...] = field(default_factory=tuple)

    @property
    def replaced(self) -> tuple[ImportReport, ...]:
        """The imports that replaced an earlier import of a log that has changed since."""
        return tuple(report for report in self.imported if report.archived is not None)

    def describe(self) -> str:
        new, again = len(self.imported) - len(self.replaced), len(self.replaced)
        lines = [
            f"Found {self.found} log{'' if self.found == 1 else 's'}: {new} new, {again} changed and imported again, "
            f"{self.unchanged} unchanged, {len(self.failed)} not imported"
        ]
        for report in self.imported:
            lines.append(f"  {report.tape}: {report.records} {report.format} records from {report.source}")
        lines += [f"  not imported: {path}: {reason}" for path, reason in self.failed]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.describe()


def llm_user_dir(environ: Mapping[str, str] | None = None, user_home: Path | None = None) -> Path:
    """llm's user folder, as llm finds it: ``$LLM_USER_PATH``, else its application folder (click's ``get_app_dir``)."""
    env = os.environ if environ is None else environ
    if env.get("LLM_USER_PATH"):
        return Path(env["LLM_USER_PATH"]).expanduser()
    home = user_home or Path.home()
    if sys.platform == "win32":
        return Path(env.get("APPDATA") or home / "AppData" / "Roaming") / "io.datasette.llm"
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / "io.datasette.llm"
    return Path(env.get("XDG_CONFIG_HOME") or home / ".config") / "io.datasette.llm"


def find_logs(
    tools: Iterable[str] = TOOLS, *, user_home: str | Path | None = None, environ: Mapping[str, str] | None = None
) -> list[FoundLog]:
    """The logs of ``tools`` in their default places under ``user_home`` (default: this user's), oldest first."""
    env = os.environ if environ is None else environ
    home = Path(user_home).expanduser() if user_home is not None else Path.home()
    wanted = list(tools)
    unknown = sorted(set(wanted) - set(TOOLS))
    if unknown:
        raise BubNbError(f"No default place is known for the logs of {unknown}; the tools: {', '.join(TOOLS)}")
    found: list[FoundLog] = []
    if "claude-code" in wanted:
        claude = Path(env["CLAUDE_CONFIG_DIR"]).expanduser() if env.get("CLAUDE_CONFIG_DIR") else home / ".claude"
        found += [FoundLog("claude-code", path) for path in (claude / "projects").glob("**/*.jsonl")]
    if "codex" in wanted:
        codex = Path(env["CODEX_HOME"]).expanduser() if env.get("CODEX_HOME") else home / ".codex"
        found += [FoundLog("codex", path) for path in (codex / "sessions").glob("**/rollout-*.jsonl")]
    if "llm" in wanted:
        logs = llm_user_dir(env, home) / "logs.db"
        found += [FoundLog("llm", logs)] if logs.is_file() else []
    files = [log for log in found if log.path.is_file()]
    return sorted(files, key=lambda log: (_stamp(log.path)[1], str(log.path)))


def discover_logs(
    home: str | Path | None = None,
    *,
    tools: Iterable[str] = TOOLS,
    user_home: str | Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> DiscoveryReport:
    """Import the logs :func:`find_logs` finds that are new or changed since the last discovery into the Bub home
    ``home`` (default ``$BUB_HOME``, else ``~/.bub``); a log that fails to import is named in the report, and the
    others are imported all the same."""
    logs = find_logs(tools, user_home=user_home, environ=environ)
    folder = tapes_home(home)
    ledger = _read_ledger(folder / LEDGER)
    earlier = _imported_before(folder) if any(str(log.path.resolve()) not in ledger for log in logs) else {}
    imported: list[ImportReport] = []
    failed: list[tuple[str, str]] = []
    unchanged = 0
    for log in logs:
        key = str(log.path.resolve())
        size, mtime = _stamp(log.path)
        known = ledger.get(key) or ({"tape": earlier[key]} if key in earlier else None)
        if known is not None and (known.get("size"), known.get("mtime_ns")) == (size, mtime):
            unchanged += 1
            continue
        try:
            report = _import(log, home, known)
        except BubNbError as exc:
            failed.append((str(log.path), str(exc)))
            continue
        imported.append(report)
        ledger[key] = {"tool": log.tool, "size": size, "mtime_ns": mtime, "tape": report.tape}
        _write_ledger(folder / LEDGER, ledger)  # after each import: a run cut short keeps what it did
    return DiscoveryReport(len(logs), tuple(imported), unchanged, tuple(failed))


def _import(log: FoundLog, home: str | Path | None, known: Mapping[str, Any] | None) -> ImportReport:
    if known is not None and isinstance(known.get("tape"), str):
        return import_log(log.path, log.tool, name=known["tape"], home=home, replace=True)
    try:
        return import_log(log.path, log.tool, home=home)
    except LogImportError as exc:
        if "already holds" not in str(exc):
            raise
    # another log has the default name (a session's subagent files share its id): this one gets its own
    digest = hashlib.md5(str(log.path.resolve()).encode(), usedforsecurity=False).hexdigest()[:8]
    return import_log(log.path, log.tool, name=f"{log.tool}__{log.path.stem[:80]}-{digest}", home=home)


def _imported_before(folder: Path) -> dict[str, str]:
    """The tapes an import wrote before any discovery noted it (``bub-nb tapes import PATH``), by the log's path: the
    ``import.source`` event an import writes first names it."""
    found: dict[str, str] = {}
    for tape in folder.glob("*.jsonl") if folder.is_dir() else ():
        try:
            with tape.open("rb") as file:
                first = orjson.loads(file.readline())
        except (OSError, orjson.JSONDecodeError):
            continue
        payload = first.get("payload") if isinstance(first, dict) else None
        data = payload.get("data") if isinstance(payload, dict) and payload.get("name") == SOURCE else None
        if isinstance(data, dict) and isinstance(data.get("path"), str):
            found[data["path"]] = tape.name.removesuffix(".jsonl")
    return found


def _stamp(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_size, stat.st_mtime_ns


def _read_ledger(path: Path) -> dict[str, dict[str, Any]]:
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return {key: value for key, value in data.items() if isinstance(value, dict)} if isinstance(data, dict) else {}


def _write_ledger(path: Path, ledger: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_bytes(orjson.dumps(ledger, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
    os.replace(temporary, path)


def run_discovery(home: str | Path | None = None) -> int:
    """``bub-nb tapes import --discover``: discover, print what was done, and fail when a log could not be imported."""
    report = discover_logs(home)
    print(report.describe())
    return 1 if report.failed else 0
