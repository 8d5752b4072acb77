"""What ``Tape.info()`` reports about a tape: its size, anchors, last usage and what its reader set aside."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


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
