"""The builtin ``tape.*`` and ``memory.*`` tools: the agent's handles on its own tape and memory zone.

None of them runs shell or kernel code. Each answers with a short text a person or a model reads.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from datetime import date as Date
from typing import TYPE_CHECKING, Any

from bub_nb.agent.tools.registry import Tool, ToolContext, ToolRegistry, tool
from bub_nb.errors import BubNbError, ToolError
from bub_nb.memory import MemoryZone
from bub_nb.tape import is_phase_anchor

if TYPE_CHECKING:
    from bub_nb.tape import Tape

SNIPPET = 160


def _tape(context: ToolContext) -> Tape:
    if context.tape is None:
        raise ToolError("This tool works on a tape; call it with ToolContext(tape=...)")
    return context.tape


def _memory(context: ToolContext) -> MemoryZone:
    zone = MemoryZone(_tape(context))
    return zone


def _today() -> Date:
    return datetime.now(UTC).date()  # the memory zone dates daily notes in UTC


def _state_text(state: dict[str, Any] | None) -> str:
    return json.dumps(state, ensure_ascii=False) if state else ""


# -- tape --------------------------------------------------------------------------------------


@tool(name="tape.handoff")
def tape_handoff(
    context: ToolContext,
    name: str,
    summary: str | None = None,
    next_steps: str | None = None,
    summarize: bool = False,
    to: str | None = None,
    reason: str | None = None,
    share: bool = False,
) -> str:
    """Create tape anchor with optional summary and next_steps state.

    The next turn's context starts at this anchor, so put in the state what the next phase needs. With
    ``to`` the conversation goes to another agent of the notebook, which continues from what you hand it.

    Args:
        name: Anchor name (e.g., 'phase-1').
        summary: Progress summary.
        next_steps: Next steps to take.
        summarize: Have the model summarise the phase being closed, citing its entries as [#id].
        to: Another agent's name: hand it the conversation (a specialist, say).
        reason: With to: why that agent is needed.
        share: With to: both agents may go on (default: the other agent takes the conversation over).
    """
    state = {key: value for key, value in (("summary", summary), ("next_steps", next_steps)) if value}
    agent = context.state.get("agent")
    if to is not None:
        return _hand_to_agent(agent, name, to, reason, share, summarize, state)
    if reason is not None or share:
        raise ToolError("reason and share go with to=AGENT, a handoff to another agent")
    if summarize:
        if agent is None:
            raise BubNbError(
                "summarize=true needs an agent's model: run it in a %%bub or comma cell, or call Agent.handoff"
            )
        entries = agent.handoff(name, summarize=True, **state)
        anchor = next(entry for entry in entries if entry.kind == "anchor")
        written = anchor.payload.get("state") or {}
        return f"anchor added: {name} (#{anchor.id}) with a summary of entries {written.get('range')}"
    anchor, _ = _tape(context).handoff(name, state or None)
    return f"anchor added: {name} (#{anchor.id})" + (f" {_state_text(state)}" if state else "")


def _hand_to_agent(
    agent: Any, name: str, to: str, reason: str | None, share: bool, summarize: bool, state: dict[str, Any]
) -> str:
    team = getattr(agent, "team", None)
    if team is None:
        raise ToolError(f"to={to!r} hands off to another agent, but this agent has no others beside it")
    done = team.handoff(
        name,
        to=to,
        sender=agent.name or "main",
        reason=reason,
        share=share,
        summarize=summarize,
        model=agent.model,
        meta=agent.meta,
        **state,
    )
    return f"handed off: {done}"


@tool(name="tape.anchors")
def tape_anchors(context: ToolContext, limit: int = 20) -> str:
    """List the tape's phase anchors, oldest first, with the state each carries.

    Args:
        limit: How many of the most recent anchors to list.
    """
    tape = _tape(context)
    # Pick from the index by name first; only the anchors shown are read from the tape.
    refs = [ref for ref in tape.store.anchors(tape.name) if is_phase_anchor(ref.name)]
    shown = refs[-limit:] if limit > 0 else []
    if not shown:
        return "(no anchors)"
    lines = [f"- {ref.name} (#{ref.id}) {_state_text(tape.get(ref.id).payload.get('state'))}".rstrip() for ref in shown]
    if len(shown) < len(refs):
        lines.insert(0, f"({len(refs) - len(shown)} earlier anchors not shown)")
    return "\n".join(lines)


@tool(name="tape.info")
def tape_info(context: ToolContext) -> str:
    """Report the tape's size, its anchors, entries since the last anchor and the last token usage."""
    return str(_tape(context).info())


@tool(name="tape.search")
def tape_search(context: ToolContext, query: str, limit: int = 20) -> str:
    """Search the whole tape, before and after anchors, for entries containing a text; newest first.

    Args:
        query: Text to look for, case-insensitive.
        limit: How many entries at most.
    """
    tape = _tape(context)
    entries = tape.search(query, limit=limit)
    if not entries:
        return f"(no entries match {query!r})"
    lines = []
    for entry in entries:
        text = " ".join(tape.text(entry).split())
        snippet = text if len(text) <= SNIPPET else text[: SNIPPET - 1] + "…"
        lines.append(f"- #{entry.id} {entry.kind} {entry.date[:19]}: {snippet}")
    if entries.cut:
        lines.append(f"(the {len(entries)} newest matches; more entries match: raise limit to see them)")
    return "\n".join(lines)


@tool(name="tape.reset")
def tape_reset(context: ToolContext, archive: bool = True) -> str:
    """Start the tape over from a fresh session/start anchor; the memory zone goes with it.

    The old tape is always kept as a .bak file beside it when the model asks, so nothing is lost.

    Args:
        archive: Keep the old tape as a .bak file first; a model's reset archives whatever this says.
    """
    forced = model_asked(context)
    if forced and _replaying(context):
        raise ToolError("tape.reset is refused while a session is replayed: the replay keeps every entry it compares")
    anchor = _tape(context).reset(archive=archive or forced)[0]
    archived = (anchor.payload.get("state") or {}).get("archived")
    return "tape reset" + (f"; the old tape is archived at {archived}" if archived else "")


def model_asked(context: ToolContext) -> bool:
    """Whether a model's turn made this call (the loop passes its ``run_id``), not a person's command."""
    return bool(context.state.get("run_id"))


def _replaying(context: ToolContext) -> bool:
    meta = getattr(context.state.get("agent"), "meta", None)
    return isinstance(meta, dict) and "replay_of" in meta


# -- memory ------------------------------------------------------------------------------------


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


BUILTIN_TOOLS: tuple[Tool, ...] = (
    tape_handoff,
    tape_anchors,
    tape_info,
    tape_search,
    tape_reset,
    memory_save,
    memory_daily,
    memory_recall,
    memory_show,
    memory_clear,
)


def builtin_registry() -> ToolRegistry:
    """A fresh registry holding every builtin tool."""
    return ToolRegistry(BUILTIN_TOOLS)


def agent_registry(
    tools: Iterable[Tool | Callable[..., Any]] | ToolRegistry | None, builtins: bool | Iterable[str]
) -> ToolRegistry:
    """An agent's tools: the builtins it chose (``True`` for all of them), then its own."""
    registry = ToolRegistry()
    if builtins:
        every = builtin_registry()
        for builtin in every if builtins is True else every.select(builtins):  # type: ignore[arg-type]
            registry.register(builtin)
    for item in tools or ():
        registry.register(item)
    return registry
