"""What ``Tape.info()`` reports about a tape: its size, anchors, last usage and what its reader set aside."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from bub_nb.markup import markdown_html, markdown_text
from bub_nb.tape.anchors import AnchorSummary
from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.events import run_usage
from bub_nb.tape.stores.protocol import StoreStats, TapeStore

_USAGE_LOOKBACK = 2000  # entries read back for the newest run event before giving up


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

    def to_markdown(self) -> str:
        """The report as a Markdown table, every value literal text (a tape's anchor names are anyone's)."""
        pairs = (line.split(": ", 1) for line in str(self).splitlines())
        rows = "\n".join(f"| {markdown_text(k)} | {markdown_text(v)} |" for k, v in pairs)
        return "| | |\n|---|---|\n" + rows

    def _repr_html_(self) -> str:
        return markdown_html(self.to_markdown())


class _ReadsBackwards(Protocol):
    def iter_reverse(self, kinds: Sequence[str] = ()) -> Iterator[TapeEntry]: ...


class _Described(Protocol):
    """What ``tape_info`` reads of a tape (a ``Tape``)."""

    name: str

    @property
    def store(self) -> TapeStore: ...

    def stats(self) -> StoreStats: ...

    def last_anchor(self, *, phase: bool = True) -> AnchorSummary | None: ...

    def last_usage(self) -> dict[str, Any] | None: ...


def last_usage(tape: _ReadsBackwards) -> dict[str, Any] | None:
    """The token usage of the newest ``run`` event, if one is among the last ``_USAGE_LOOKBACK`` entries."""
    for count, entry in enumerate(tape.iter_reverse()):
        if count >= _USAGE_LOOKBACK:
            break
        usage = run_usage(entry)
        if usage:
            return usage
    return None


def tape_info(tape: _Described) -> TapeInfo:
    """What ``Tape.info()`` reports, read from the store's stats and anchor index and the newest run event."""
    stats = tape.stats()
    anchor = tape.last_anchor()
    return TapeInfo(
        name=tape.name,
        location=stats.location,
        entries=stats.entries,
        anchors=len(tape.store.anchors(tape.name)),
        last_anchor=anchor.name if anchor else None,
        entries_since_last_anchor=stats.last_id - anchor.id if anchor else stats.entries,
        last_usage=tape.last_usage(),
        bad_lines=stats.bad_lines,
        torn_tail_bytes=stats.torn_tail_bytes,
        size_bytes=stats.size_bytes,
    )
