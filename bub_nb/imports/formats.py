"""The log formats an import reads, and telling them apart by a look at the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from bub_nb.errors import LogImportError
from bub_nb.imports import agents_sdk, atif, claude_code, codex, llm_db
from bub_nb.imports.draft import TapeDraft
from bub_nb.imports.records import NotJson, is_sqlite, jsonl_records, load_json, table_names

FORMATS: Final = {
    claude_code.FORMAT: "Claude Code session JSONL (~/.claude/projects/…/<session>.jsonl)",
    codex.FORMAT: "Codex CLI rollout JSONL (~/.codex/sessions/…/rollout-*.jsonl)",
    llm_db.FORMAT: "simonw/llm's logs.db (SQLite)",
    agents_sdk.FORMAT: "an OpenAI Agents SDK SQLiteSession database",
    atif.FORMAT: "a Harbor ATIF trajectory (trajectory.json)",
}
"""Every format by its name, with what it is."""

_SNIFF_RECORDS: Final = 8


def detect_format(path: Path) -> str:
    """The format of the log at ``path``, told from its first bytes, tables or records."""
    if is_sqlite(path):
        tables = table_names(path)
        if agents_sdk.looks_like(tables):
            return agents_sdk.FORMAT
        if llm_db.looks_like(tables):
            return llm_db.FORMAT
        raise LogImportError(
            f"SQLite database {str(path)!r} is neither llm's logs.db nor an Agents SDK session "
            f"(its tables: {', '.join(sorted(tables)) or 'none'}); pass format= to say which it is"
        )
    for index, record in enumerate(jsonl_records(path)):
        if index >= _SNIFF_RECORDS or isinstance(record, NotJson):
            break
        if claude_code.looks_like(record):
            return claude_code.FORMAT
        if codex.looks_like(record):
            return codex.FORMAT
    if _starts_an_object(path) and atif.looks_like(_document(path, quiet=True)):
        return atif.FORMAT
    raise LogImportError(
        f"Log {str(path)!r} is in no format this import knows ({', '.join(FORMATS)}); pass format= if it is one"
    )


def read_log(format: str, path: Path, draft: TapeDraft) -> dict[str, Any]:
    """Read the log at ``path`` as ``format`` into ``draft``; returns what the log says of its session."""
    if format == claude_code.FORMAT:
        return claude_code.read(jsonl_records(path), draft)
    if format == codex.FORMAT:
        return codex.read(jsonl_records(path), draft)
    if format == atif.FORMAT:
        document = _document(path)
        if not atif.looks_like(document):
            raise LogImportError(
                f"Log {str(path)!r} is not an ATIF trajectory: it has no schema_version 'ATIF-…' and steps"
            )
        return atif.read(document, draft)
    if not is_sqlite(path):
        raise LogImportError(f"Log {str(path)!r} is not a SQLite database, so it cannot be {format!r}")
    if format == llm_db.FORMAT:
        return llm_db.read(path, draft)
    return agents_sdk.read(path, draft)


def _starts_an_object(path: Path) -> bool:
    """Whether the file's first character (after blanks) opens a JSON object: only then is it read whole."""
    with path.open("rb") as handle:
        return handle.read(4096).lstrip()[:1] == b"{"


def _document(path: Path, *, quiet: bool = False) -> Any:
    try:
        return load_json(path.read_bytes())
    except (ValueError, RecursionError) as exc:
        if quiet:
            return None
        raise LogImportError(f"Log {str(path)!r} is not one JSON document: {exc}") from exc
