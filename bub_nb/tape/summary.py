"""Small read-only values that describe a tape: anchor summaries and tape info."""

from __future__ import annotations

import html
from dataclasses import asdict, dataclass
from typing import Any

import orjson


@dataclass(frozen=True, slots=True)
class AnchorSummary:
    """An anchor as listed by ``Tape.anchors()``: where it is, what it is called, what it carries."""

    id: int
    name: str
    state: dict[str, Any] | None
    date: str

    def _repr_markdown_(self) -> str:
        state = orjson.dumps(self.state).decode() if self.state else ""
        return f"⚓ **{self.name}** (#{self.id}, {self.date[:19]}) {state}"

    def _repr_html_(self) -> str:
        state = html.escape(orjson.dumps(self.state).decode()) if self.state else ""
        where = f"#{self.id} {self.date[:19]}"
        return f"<span>⚓ <b>{html.escape(self.name)}</b> <small>{where}</small> <code>{state}</code></span>"


@dataclass(frozen=True, slots=True)
class TapeInfo:
    """What ``Tape.info()`` reports."""

    name: str
    location: str
    entries: int
    anchors: int
    last_anchor: str | None
    entries_since_last_anchor: int
    last_usage: dict[str, Any] | None
    bad_lines: int
    torn_tail_bytes: int
    size_bytes: int | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        usage = self.last_usage or {}
        lines = [
            f"tape: {self.name}",
            f"location: {self.location}",
            f"entries: {self.entries}",
            f"anchors: {self.anchors}",
            f"last anchor: {self.last_anchor or '(none)'}",
            f"entries since last anchor: {self.entries_since_last_anchor}",
            "last usage: "
            + (
                f"{usage.get('prompt_tokens', '?')} prompt + {usage.get('completion_tokens', '?')} completion tokens"
                if usage
                else "(no model call yet)"
            ),
        ]
        if self.bad_lines:
            lines.append(f"undecodable lines (skipped, kept in the file): {self.bad_lines}")
        if self.torn_tail_bytes:
            lines.append(f"torn last line (kept, set aside): {self.torn_tail_bytes} bytes")
        return "\n".join(lines)

    def _repr_markdown_(self) -> str:
        rows = "\n".join(f"| {k} | {v} |" for k, v in (line.split(": ", 1) for line in str(self).splitlines()))
        return "| | |\n|---|---|\n" + rows
