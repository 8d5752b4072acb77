"""The builtin ``memory.*`` tools: the agent's handles on its memory zone (long-term memory and daily notes)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from datetime import date as Date
from typing import TYPE_CHECKING

from bub_nb.agent.tools.registry import ToolContext, tool
from bub_nb.errors import ToolError
from bub_nb.memory import MemoryZone

if TYPE_CHECKING:
    pass


def _memory(context: ToolContext) -> MemoryZone:
    zone = MemoryZone(context.require_tape())
    return zone


def _today() -> Date:
    return datetime.now(UTC).date()  # the memory zone dates daily notes in UTC


@tool(name="memory.save")
def memory_save(context: ToolContext, content: str) -> str:
    """Replace long-term memory: lasting preferences and facts. Include what should be kept.

    Args:
        content: The whole new long-term memory.
    """
    snapshot = _memory(context).save_long_term(content)
    return f"saved to long-term memory (version {snapshot.version})"


@tool(name="memory.daily")
def memory_daily(context: ToolContext, content: str, date: str | None = None) -> str:
    """Append to the daily notes of a day.

    Args:
        content: What to note.
        date: The day as YYYY-MM-DD; today (UTC) when left out.
    """
    if date is not None:
        try:
            Date.fromisoformat(date)
        except ValueError:
            raise ToolError(f"Date {date!r} is not a YYYY-MM-DD day") from None
    day = date or _today().isoformat()
    snapshot = _memory(context).append_daily(content, day)
    return f"added to daily notes of {day} (version {snapshot.version})"


@tool(name="memory.recall")
def memory_recall(context: ToolContext, query: str | None = None, days: int = 7) -> str:
    """Recall long-term memory and the daily notes of recent days, optionally only those mentioning a text.

    Args:
        query: Text the memories must contain, case-insensitive; everything when left out.
        days: How many days of daily notes, today included.
    """
    snapshot = _memory(context).read()
    since = (_today() - timedelta(days=max(days, 1) - 1)).isoformat()

    def wanted(text: str) -> bool:
        return bool(text) and (query is None or query.casefold() in text.casefold())

    sections = [f"## Long-term Memory\n{snapshot.long_term}"] if wanted(snapshot.long_term) else []
    sections += [
        f"### {note.date}\n{note.content}" for note in snapshot.dailies if note.date >= since and wanted(note.content)
    ]
    if sections:
        return "\n\n".join(sections)
    return f"(no memories mention {query!r})" if query else "(memory is empty)"


@tool(name="memory.show")
def memory_show(context: ToolContext) -> str:
    """Show a summary of the memory zone: its version, long-term memory and which days have notes."""
    snapshot = _memory(context).read()
    if snapshot.version == 0:
        return "no memory zone on this tape yet"
    days = ", ".join(note.date for note in snapshot.dailies) or "(none)"
    long_term = snapshot.long_term or "(empty)"
    return f"memory zone version {snapshot.version}\nlong-term: {long_term}\ndaily notes: {days}"


@tool(name="memory.clear")
def memory_clear(context: ToolContext) -> str:
    """Forget all memory. Earlier zones stay on the tape but no longer count."""
    snapshot = _memory(context).clear()
    return f"memory cleared (version {snapshot.version})"
