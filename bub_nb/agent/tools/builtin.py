"""The builtin ``tape.*`` tools, the agent's handles on its own tape, and the registries of every builtin tool.

None of them runs shell or kernel code. Each answers with a short text a person or a model reads.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from bub_nb.agent.tools.bounds import fit_argument
from bub_nb.agent.tools.memory_tools import memory_clear, memory_daily, memory_recall, memory_save, memory_show
from bub_nb.agent.tools.registry import Tool, ToolContext, ToolRegistry, tool
from bub_nb.errors import BubNbError, ToolError
from bub_nb.tape import is_phase_anchor

if TYPE_CHECKING:
    pass

SNIPPET = 160


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
        summarize: Have the model summarize the phase being closed, citing its entries as [#id].
        to: Another agent's name: hand it the conversation (a specialist, say).
        reason: With to: why that agent is needed.
        share: With to: both agents may go on (default: the other agent takes the conversation over).
    """
    agent = context.state.get("agent")
    # What the model writes here is state every later view carries: bounded as its tool results are.
    budget = getattr(agent, "result_budget", None)
    summary, next_steps, reason = (
        fit_argument(text, budget, what) if isinstance(text, str) else text
        for text, what in ((summary, "summary"), (next_steps, "next_steps"), (reason, "reason"))
    )
    state = {key: value for key, value in (("summary", summary), ("next_steps", next_steps)) if value}
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
    anchor, _ = context.require_tape().handoff(name, state or None)
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
    tape = context.require_tape()
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
    return str(context.require_tape().info())


@tool(name="tape.search")
def tape_search(context: ToolContext, query: str, limit: int = 20) -> str:
    """Search the whole tape, before and after anchors, for entries containing a text; newest first.

    Args:
        query: Text to look for, case-insensitive.
        limit: How many entries at most.
    """
    tape = context.require_tape()
    wanted = limit
    while True:  # retracted hits are left out, as views leave them out: a model never reads them back
        found = tape.search(query, limit=wanted)
        retracted = tape.retracted_among(entry.id for entry in found)  # read from the oldest hit on only
        kept = [entry for entry in found if entry.id not in retracted]
        hidden = len(found) - len(kept)
        if len(kept) >= limit or not found.cut:
            break
        wanted += hidden  # as many more as were left out
    lines = [f"({hidden} retracted entries match and are left out)"] if hidden else []
    if not kept[:limit]:
        return lines[0] if lines else f"(no entries match {query!r})"
    for entry in kept[:limit]:
        text = " ".join(tape.text(entry).split())
        snippet = text if len(text) <= SNIPPET else text[: SNIPPET - 1] + "…"
        lines.append(f"- #{entry.id} {entry.kind} {entry.date[:19]}: {snippet}")
    if found.cut or len(kept) > limit:
        lines.append(f"(the {min(limit, len(kept))} newest matches; more entries match: raise limit to see them)")
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
    anchor = context.require_tape().reset(archive=archive or forced)[0]
    archived = (anchor.payload.get("state") or {}).get("archived")
    return "tape reset" + (f"; the old tape is archived at {archived}" if archived else "")


@tool(name="tape.retract")
def tape_retract(context: ToolContext, entries: str, reason: str | None = None) -> str:
    """Take entries out of every later view; they stay on the tape. A tool call goes with its results.

    Args:
        entries: An entry id (7) or an inclusive range of ids (5-9).
        reason: Why they are taken back.
    """
    event = context.require_tape().retract(entries, reason=reason)
    return f"retracted {_ids_text(event)} (#{event.id})"


@tool(name="tape.unretract")
def tape_unretract(context: ToolContext, entries: str, reason: str | None = None) -> str:
    """Bring retracted entries back into later views.

    Args:
        entries: An entry id (7) or an inclusive range of ids (5-9).
        reason: Why they come back.
    """
    event = context.require_tape().unretract(entries, reason=reason)
    return f"brought back {_ids_text(event)} (#{event.id})"


def _ids_text(event: Any) -> str:
    spans = event.payload["data"]["ids"]
    return ", ".join(f"#{a}" if a == b else f"#{a}-#{b}" for a, b in spans)


def model_asked(context: ToolContext) -> bool:
    """Whether a model's turn made this call (the loop passes its ``run_id``), not a person's command."""
    return bool(context.state.get("run_id"))


def _replaying(context: ToolContext) -> bool:
    meta = getattr(context.state.get("agent"), "meta", None)
    return isinstance(meta, dict) and "replay_of" in meta


# -- memory ------------------------------------------------------------------------------------


BUILTIN_TOOLS: tuple[Tool, ...] = (
    tape_handoff,
    tape_anchors,
    tape_info,
    tape_search,
    tape_reset,
    tape_retract,
    tape_unretract,
    memory_save,
    memory_daily,
    memory_recall,
    memory_show,
    memory_clear,
)


OPT_IN: frozenset[str] = frozenset({"tape.retract", "tape.unretract"})
"""Builtin tools a model is given only when the user names them (``--tools tape.retract``); a person's comma
command runs them always. A glob such as ``tape.*`` does not reach them."""


def builtin_registry() -> ToolRegistry:
    """A fresh registry holding every builtin tool."""
    return ToolRegistry(BUILTIN_TOOLS)


def agent_registry(
    tools: Iterable[Tool | Callable[..., Any]] | ToolRegistry | None, builtins: bool | Iterable[str]
) -> ToolRegistry:
    """An agent's tools: the builtins it chose (see :func:`model_builtins`), then its own."""
    registry = ToolRegistry()
    if builtins:
        for builtin in model_builtins(builtins):
            registry.register(builtin)
    for item in tools or ():
        registry.register(item)
    return registry


def model_builtins(selection: bool | Iterable[str]) -> ToolRegistry:
    """The builtin tools a model is given: all but :data:`OPT_IN` (``True``), or those ``selection`` names,
    where a glob leaves the opt-in tools out and only their own names bring them in."""
    builtins = builtin_registry()
    if selection is True:
        return builtins.select(name for name in builtins.names if name not in OPT_IN)
    names = [selection] if isinstance(selection, str) else list(selection or ())
    chosen = builtins.select(names)
    named = {item.name for item in chosen if item.name in names or item.model_name in names}
    return ToolRegistry(item for item in chosen if item.name not in OPT_IN or item.name in named)
