"""One ACP session: its tape, the agent whose turns it runs, and what each turn tells the client.

Text goes out as agent message chunks, the turn's first at once and the rest as soon as the pipe is free; each
tool call as a tool call and then its result, as the tape records it; ``python.run``'s consent as the client's
permission request; after the turn a usage update, carrying a summarizing handoff the turn wrote as
``_meta.bub_nb.compaction``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from bub_nb.agent.acp.tapes import replayed
from bub_nb.agent.commands import ALIASES, PREFIX, command_names
from bub_nb.agent.kernel_tools import RUNNING, Decision
from bub_nb.agent.loop import Agent
from bub_nb.agent.models.base import context_window_of
from bub_nb.agent.results import fit_result
from bub_nb.agent.tools import ToolCallError, ToolContext, ToolRegistry, builtin_registry
from bub_nb.agent.turn import Turn
from bub_nb.context.messages import result_text
from bub_nb.context.tokens import count_message_tokens
from bub_nb.errors import BubNbError
from bub_nb.tape import Tape
from bub_nb.tape.redact import error_line
from bub_nb.tape.reports.prices import cost_of, current_prices


class Client(Protocol):
    """What a session needs of the server it belongs to: a way to the client, and whether the client left."""

    gone: bool

    async def send(self, session_id: str, update: Any) -> None: ...

    async def ask(self, session_id: str, tool_call: Any, options: list[Any]) -> Any: ...


SOURCE = "acp"
"""The ``source`` every entry of an ACP turn carries in its meta, beside ``cwd``."""
RESULT_CHARS = 4000
"""How much of a tool's result a tool call update shows (the tape keeps what the model read)."""
PRICE_UNIT = "USD"
"""ACP names a currency; a price table has none, so its unit is reported as this (``_meta`` says so)."""
COMMAND_HINTS = {"handoff": "name [summarize=true]", "tape.search": "query", "memory.save": "content"}


def sdk_schema() -> Any:
    from acp import schema

    return schema


class WatchedTools(ToolRegistry):
    """An agent's tools, each call told to the client as a tool call and its result."""

    def __init__(self, tools: ToolRegistry, session: Session) -> None:
        super().__init__(tools)
        self.session = session
        self._ids = itertools.count(1)

    async def call(
        self, name: str, arguments: str | Mapping[str, Any] | None = None, context: ToolContext | None = None
    ) -> Any:
        budget = self.session.agent.result_budget
        run_id = context.state.get("run_id") if context is not None else None
        call_id = f"{run_id or 'call'}-{next(self._ids)}"
        self.session.calls.append(call_id)
        await self.session.tool_started(call_id, self.session.dotted(name), arguments)
        try:
            result = await super().call(name, arguments, context)
        except ToolCallError as exc:
            await self.session.tool_ended(call_id, fit_result(exc.message, budget), failed=True)
            raise
        await self.session.tool_ended(call_id, fit_result(result_text(result), budget), failed=False)  # as recorded
        return result


@dataclass
class Session:
    """One ACP session: its tape, the agent that runs its turns, and the connection its updates go out on."""

    id: str
    cwd: str
    tape: Tape
    agent: Agent
    server: Client
    calls: list[str] = field(default_factory=list)
    cancelled: bool = False
    task: asyncio.Task[Turn] | None = None
    cost: float | None = None
    pending: list[str] = field(default_factory=list)
    sender: asyncio.Future[None] | None = None
    """What the tape's turns cost so far at the prices set, read once when the session opens."""

    async def send(self, update: Any) -> None:
        """Send ``update`` after the text still on its way, so the client reads them in the turn's order."""
        await self.flush()
        await self.server.send(self.id, update)

    async def say(self, text: str, *, first: bool = False) -> None:
        """Queue streamed text; it goes out as soon as the pipe is free, the pieces that waited joined in one
        chunk, so a slow client never holds the turn up and a fast one gets every delta as it came.

        The turn's ``first`` text is written before the turn goes on: a model's stream often hands over a burst
        of deltas it had buffered without ever yielding to the event loop, and the first chunk would otherwise
        wait for the burst's end, often the turn's."""
        self.pending.append(text)
        if self.sender is None or self.sender.done():
            self.sender = asyncio.ensure_future(self._send_pending())
        if first:
            await self.flush()

    async def flush(self) -> None:
        while self.sender is not None and not self.sender.done():
            await asyncio.shield(self.sender)

    async def _send_pending(self) -> None:
        while self.pending and not self.server.gone:
            text = "".join(self.pending)
            self.pending.clear()
            try:
                await self.server.send(self.id, _chunk("agent_message_chunk", text))
            except Exception:  # the client went away: the turn stops as an interrupted cell does
                self.server.gone = self.cancelled = True
                self.agent.abort()
        self.pending.clear()

    # -- what a turn tells the client -------------------------------------------------------------

    def dotted(self, name: str) -> str:
        """A tool's own name (``tape.info``) from the name models call it by (``tape_info``)."""
        return self.agent.tools.get(name).name if name in self.agent.tools else name

    async def tool_started(self, call_id: str, name: str, arguments: Any) -> None:
        s = sdk_schema()
        await self.send(
            s.ToolCallStart(
                session_update="tool_call",
                tool_call_id=call_id,
                title=name,
                kind=_kind(name),
                status="in_progress",
                raw_input=_arguments(arguments),
            )
        )

    async def tool_ended(self, call_id: str, text: str, *, failed: bool) -> None:
        s = sdk_schema()
        content = [
            s.ContentToolCallContent(type="content", content=s.TextContentBlock(type="text", text=text[:RESULT_CHARS]))
        ]
        await self.send(
            s.ToolCallProgress(
                session_update="tool_call_update",
                tool_call_id=call_id,
                status="failed" if failed else "completed",
                content=content,
                raw_output=text[:RESULT_CHARS],
            )
        )

    async def consent(self, code: str) -> Decision:
        """``python.run``'s consent: the client's permission request; a client that cannot answer refuses."""
        s = sdk_schema()
        call_id = self.calls[-1] if self.calls else "python.run"
        options = [
            s.PermissionOption(option_id="allow", name="Run this code", kind="allow_once"),
            s.PermissionOption(option_id="reject", name="Do not run it", kind="reject_once"),
        ]
        tool_call = s.ToolCallUpdate(
            tool_call_id=call_id,
            title="python.run",
            kind="execute",
            raw_input={"code": code},
            content=[
                s.ContentToolCallContent(
                    type="content", content=s.TextContentBlock(type="text", text=code[:RESULT_CHARS])
                )
            ],
        )
        try:
            await self.flush()
            answer = await self.server.ask(self.id, tool_call, options)
        except Exception as exc:  # no client, or one that cannot ask: nothing runs
            return Decision("refused", f"The ACP client could not be asked to run code ({error_line(exc)})")
        outcome = answer.outcome
        if getattr(outcome, "outcome", None) == "selected" and outcome.option_id == "allow":
            return Decision("approved", "approved in the ACP client")
        if getattr(outcome, "outcome", None) == "cancelled":
            return Decision("denied", "The permission request was cancelled; the code did not run")
        return Decision("denied", "The user declined to run this code in the ACP client")

    # -- a turn -----------------------------------------------------------------------------------

    async def run(self, prompt: str) -> Turn:
        """The turn for ``prompt``, streamed; a cancel or a client gone ends it interrupted, its partial kept."""
        self.cancelled = False
        before = self.tape.last_id
        deltas: AsyncIterator[str] = self.agent.astream(prompt)
        spoke = False
        try:
            async for delta in deltas:
                if delta and not self.server.gone:
                    await self.say(delta, first=not spoke)
                    spoke = True
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if not (self.cancelled and task is not None and task.uncancel() == 0):
                self.agent.abort()
                raise
        finally:
            with contextlib.suppress(Exception):
                await deltas.aclose()  # type: ignore[attr-defined]
        turn = self.agent.last_turn
        if turn is None:
            raise BubNbError(f"The turn on tape {self.tape.name!r} produced no result")
        with contextlib.suppress(Exception):
            await self.flush()
        if not self.server.gone:
            await self.after_turn(turn, before)
        return turn

    async def after_turn(self, turn: Turn, before: int) -> None:
        """The usage update: tokens in the context now, the model's window, the session's cost where priced; a
        summarizing handoff the turn wrote rides along as the compaction it is."""
        s = sdk_schema()
        meta: dict[str, Any] = {}
        if compaction := _compaction(self.tape, before):
            meta["compaction"] = compaction
        model = self.agent.model
        used = turn.view.total_tokens if turn.view is not None else 0
        used += count_message_tokens({"role": "assistant", "content": turn.text}) if turn.text else 0
        window = context_window_of(model)
        usage = turn.usage
        prices = current_prices()
        if usage is not None:
            meta["turn"] = {
                "input_tokens": usage.prompt_tokens,
                "output_tokens": usage.completion_tokens,
                "estimated": usage.estimated,
            }
            if (spent := cost_of(turn.model, usage.prompt_tokens, usage.completion_tokens, prices)) is not None:
                self.cost = (self.cost or 0.0) + spent
        cost = s.Cost(amount=self.cost, currency=PRICE_UNIT) if self.cost is not None and prices else None
        if window is None:
            meta["window_unknown"] = True
        await self.send(
            s.UsageUpdate(
                session_update="usage_update", used=used, size=window or 0, cost=cost, field_meta={"bub_nb": meta}
            )
        )
        for notice in turn.notices:
            await self.send(_chunk("agent_message_chunk", f"\n\n{notice}"))

    async def replay(self) -> None:
        """The tape's view told to the client as the updates a live session would have sent."""
        view = self.agent.view()
        messages = list(view.messages)
        anchor = view.anchor
        if anchor is not None and view.sources[:1] == (anchor.id,):  # the phase's anchor: its summary, if any
            messages.pop(0)
            summary = (anchor.state or {}).get("summary")
            if isinstance(summary, str) and summary:
                await self.send(_chunk("agent_thought_chunk", f"{anchor.name}: {summary}"))
        for kind, data in replayed(messages):
            if kind == "user":
                await self.send(_chunk("user_message_chunk", data["text"]))
            elif kind == "agent":
                await self.send(_chunk("agent_message_chunk", data["text"]))
            elif kind == "tool_call":
                await self.tool_started(data["id"], self.dotted(data["name"]), data["arguments"])
            else:
                await self.tool_ended(data["id"], data["text"], failed=False)

    async def announce_commands(self) -> None:
        """The comma commands, as the session's available commands."""
        s = sdk_schema()
        commands = []
        registry = builtin_registry()  # what a comma command runs, as in a cell
        for name in command_names(registry):
            tool = registry.get(ALIASES.get(name, name)) if ALIASES.get(name, name) in registry else None
            description = (tool.description.strip().splitlines() or [""])[0] if tool is not None else "the commands"
            hint = COMMAND_HINTS.get(name)
            commands.append(
                s.AvailableCommand(
                    name=f"{PREFIX}{name}",
                    description=description or f"{PREFIX}{name}",
                    input=s.AvailableCommandInput(root=s.UnstructuredCommandInput(hint=hint)) if hint else None,
                )
            )
        await self.send(
            s.AvailableCommandsUpdate(session_update="available_commands_update", available_commands=commands)
        )


def _chunk(kind: str, text: str) -> Any:
    """A message or thought chunk of ``kind`` holding ``text``."""
    s = sdk_schema()
    made = {"agent_message_chunk": s.AgentMessageChunk, "user_message_chunk": s.UserMessageChunk}
    return made.get(kind, s.AgentThoughtChunk)(session_update=kind, content=s.TextContentBlock(type="text", text=text))


def _compaction(tape: Tape, before: int) -> dict[str, Any] | None:
    """The last summarizing handoff written since entry ``before``: its anchor and the summary it kept.

    The anchors are found in the tape's anchor index and only theirs are read: reading the turn's entries would
    decode the tape back to its last anchor, which is the whole tape for a session that never handed off."""
    for ref in reversed(tape.store.anchors(tape.name)):
        if ref.id <= before:
            break
        entry = tape.get(ref.id)
        state = entry.payload.get("state") or {}
        if isinstance(state, dict) and isinstance(state.get("summary"), str) and state["summary"]:
            return {
                "compactionId": f"{tape.name}#{entry.id}",
                "status": "completed",
                "anchor": entry.payload.get("name"),
                "summary": state["summary"],
            }
    return None


def tape_cost(tape: Tape) -> float | None:
    """What the tape's recorded turns cost at the prices set (``None`` when nothing is priced)."""
    prices = current_prices()
    if not prices:
        return None
    total: float | None = None
    for entry in tape.query().kinds("event").all():
        data = entry.payload.get("data") if entry.payload.get("name") == "run" else None
        if not isinstance(data, dict):
            continue
        if isinstance(usage := data.get("usage"), dict):
            spent = cost_of(data.get("model"), usage.get("prompt_tokens"), usage.get("completion_tokens"), prices)
            total = total if spent is None else (total or 0.0) + spent
    return total


def _arguments(arguments: Any) -> Any:
    if isinstance(arguments, str):
        try:
            return json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            return {"arguments": arguments}
    return arguments


def _kind(name: str) -> str:
    """The ACP tool kind a client draws a call with."""
    if name == RUNNING:
        return "execute"
    if name.endswith(("search", "recall")):
        return "search"
    if name.startswith("notebook.") or name in ("tape.info", "tape.anchors"):
        return "read"
    return "other"
