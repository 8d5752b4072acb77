"""Small read-only values that describe a tape: anchor summaries and tape info."""

from __future__ import annotations

import html
from dataclasses import asdict, dataclass
from typing import Any

import orjson

from bub_nb.tape.anchor_state import state_sources, state_uncited


@dataclass(frozen=True, slots=True)
class AnchorSummary:
    """An anchor as listed by ``Tape.anchors()``: where it is, what it is called, what it carries."""

    id: int
    name: str
    state: dict[str, Any] | None
    date: str

    @property
    def sources(self) -> tuple[int, ...]:
        """The entries this anchor's summary cites (``()`` for a plain handoff)."""
        return state_sources(self.state)

    @property
    def uncited(self) -> tuple[str, ...] | None:
        """The sentences of its summary that cite nothing; ``None`` when the state does not say."""
        return state_uncited(self.state)

    def _citations_note(self) -> str:
        uncited = self.uncited
        if not self.sources and uncited is None:
            return ""
        cites = ", ".join(f"#{entry_id}" for entry_id in self.sources) or "nothing"
        return f" · cites {cites}" + (f", {len(uncited)} uncited sentences" if uncited else "")

    def _repr_markdown_(self) -> str:
        state = orjson.dumps(self.state).decode() if self.state else ""
        return f"⚓ **{self.name}** (#{self.id}, {self.date[:19]}{self._citations_note()}) {state}"

    def _repr_html_(self) -> str:
        state = html.escape(orjson.dumps(self.state).decode()) if self.state else ""
        where = f"#{self.id} {self.date[:19]}{self._citations_note()}"
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
