"""bub_nb as an agent ACP clients drive (jupyter-ai, Zed, marimo, editors), on the protocol's official SDK.

A session is a tape (``sessions``); a prompt is a turn of an :class:`~bub_nb.agent.Agent` on it, streamed through
the agent's stream API, so its hooks, tools, memory and everything it writes are a notebook turn's. What the turn
does reaches the client as session updates: text as agent message chunks, each tool call as a tool call and its
result, ``python.run`` as the client's permission request, and after the turn a usage update. A summarising handoff
rides on that usage update as ``_meta.bub_nb.compaction`` (the SDK has no compaction update yet). ``session/cancel``
is the notebook's ■: the turn ends interrupted, its partial answer kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from bub_nb.agent.acp.sessions import (
    Place,
    SessionRefused,
    check_cwd,
    check_session_id,
    new_session_name,
    replayed,
    session_rows,
)
from bub_nb.agent.commands import ALIASES, PREFIX, command_names
from bub_nb.agent.kernel_tools import RUNNING, Decision, NamespaceKernel, kernel_tools
from bub_nb.agent.loop import Agent
from bub_nb.agent.models import Model, resolve_model
from bub_nb.agent.models.base import context_window_of
from bub_nb.agent.results import fit_result
from bub_nb.agent.tools import ToolCallError, ToolContext, ToolRegistry, builtin_registry
from bub_nb.agent.turn import Turn
from bub_nb.context.messages import result_text
from bub_nb.context.tokens import count_message_tokens
from bub_nb.errors import BubNbError
from bub_nb.tape import Tape
from bub_nb.tape.reports.prices import cost_of, current_prices

log = logging.getLogger(__name__)

SOURCE = "acp"
"""The ``source`` every entry of an ACP turn carries in its meta, beside ``cwd``."""
RESULT_CHARS = 4000
"""How much of a tool's result a tool call update shows (the tape keeps what the model read)."""
PRICE_UNIT = "USD"
"""ACP names a currency; a price table has none, so its unit is reported as this (``_meta`` says so)."""
COMMAND_HINTS = {"handoff": "name [summarize=true]", "tape.search": "query", "memory.save": "content"}


def _schema() -> Any:
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
    server: AcpServer
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

    def say(self, text: str) -> None:
        """Queue streamed text; it goes out as soon as the pipe is free, the pieces that waited joined in one
        chunk, so a slow client never holds the turn up and a fast one gets every delta as it came."""
        self.pending.append(text)
        if self.sender is None or self.sender.done():
            self.sender = asyncio.ensure_future(self._send_pending())

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
        s = _schema()
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
        s = _schema()
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
        s = _schema()
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
            return Decision("refused", f"The ACP client could not be asked to run code ({_one_line(exc)})")
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
        try:
            async for delta in deltas:
                if delta and not self.server.gone:
                    self.say(delta)
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
        summarising handoff the turn wrote rides along as the compaction it is."""
        s = _schema()
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
        s = _schema()
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


class AcpServer:
    """The ACP agent: ``initialize``, ``session/new``, ``/load``, ``/resume``, ``/list``, ``/prompt``, ``/cancel``."""

    def __init__(self, place: Place, model: str | Model | None = None) -> None:
        self.place = place
        self.model = resolve_model(model)
        self.sessions: dict[str, Session] = {}
        self.conn: Any = None
        self.gone = False
        self.can_ask = True

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def send(self, session_id: str, update: Any) -> None:
        if self.conn is None or self.gone:
            return
        await self.conn.session_update(session_id=session_id, update=update)

    async def ask(self, session_id: str, tool_call: Any, options: list[Any]) -> Any:
        if self.conn is None or self.gone:
            raise BubNbError("the client is gone")
        return await self.conn.request_permission(session_id=session_id, tool_call=tool_call, options=options)

    # -- the protocol -----------------------------------------------------------------------------

    async def initialize(
        self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None, **kwargs: Any
    ) -> Any:
        import acp

        import bub_nb

        s = _schema()
        capabilities = s.AgentCapabilities(
            load_session=True,
            prompt_capabilities=s.PromptCapabilities(embedded_context=True),
            session_capabilities=s.SessionCapabilities(
                list=s.SessionListCapabilities(),
                resume=s.SessionResumeCapabilities(),
                close=s.SessionCloseCapabilities(),
            ),
        )
        return s.InitializeResponse(
            protocol_version=min(protocol_version, acp.PROTOCOL_VERSION) if protocol_version else acp.PROTOCOL_VERSION,
            agent_capabilities=capabilities,
            agent_info=s.Implementation(name="bub_nb", title="bub_nb", version=bub_nb.__version__),
            auth_methods=[],
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> Any:
        return _schema().AuthenticateResponse()

    async def new_session(
        self, cwd: str, additional_directories: Any = None, mcp_servers: Any = None, **kwargs: Any
    ) -> Any:
        session = self._open(new_session_name(_checked(check_cwd, cwd)), cwd, mcp_servers, create=True)
        asyncio.get_running_loop().call_soon(lambda: asyncio.ensure_future(session.announce_commands()))
        return _schema().NewSessionResponse(session_id=session.id)

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: Any = None, additional_directories: Any = None, **kwargs: Any
    ) -> Any:
        session = self._open(session_id, cwd, mcp_servers, create=False)
        await session.replay()
        await session.announce_commands()
        return _schema().LoadSessionResponse()

    async def resume_session(
        self, session_id: str, cwd: str, additional_directories: Any = None, mcp_servers: Any = None, **kwargs: Any
    ) -> Any:
        session = self._open(session_id, cwd, mcp_servers, create=False)
        asyncio.get_running_loop().call_soon(lambda: asyncio.ensure_future(session.announce_commands()))
        return _schema().ResumeSessionResponse()

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any) -> Any:
        s = _schema()
        if cwd is not None:
            _checked(check_cwd, cwd)
        rows, following = await asyncio.to_thread(session_rows, self.place, cwd, cursor)
        return s.ListSessionsResponse(sessions=[s.SessionInfo(**row) for row in rows], next_cursor=following)

    async def close_session(self, session_id: str, **kwargs: Any) -> Any:
        session = self.sessions.pop(session_id, None)
        if session is not None:
            session.agent.abort()
        return _schema().CloseSessionResponse()

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> Any:
        from acp import RequestError

        s = _schema()
        session = self._session(session_id)
        text = prompt_text(prompt)
        if session.task is not None and not session.task.done():
            raise RequestError.invalid_request({"message": "A turn is already running in this session"})
        session.task = asyncio.ensure_future(session.run(text))
        try:
            turn = await asyncio.shield(session.task)
        except asyncio.CancelledError:  # the connection closed under the request: the turn ends, its partial kept
            session.agent.abort()
            with contextlib.suppress(BaseException):
                await session.task
            raise
        except BubNbError as exc:
            raise RequestError.invalid_request({"message": _one_line(exc)}) from None
        reasons = {"interrupted": "cancelled", "max_steps": "max_turn_requests"}
        usage = None
        if turn.usage is not None:
            u = turn.usage
            usage = s.Usage(
                total_tokens=u.total_tokens, input_tokens=u.prompt_tokens, output_tokens=u.completion_tokens
            )
        return s.PromptResponse(stop_reason=reasons.get(turn.status, "end_turn"), usage=usage)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self.sessions.get(session_id)
        if session is not None and session.task is not None and not session.task.done():
            session.cancelled = True
            session.agent.abort()

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> Any:
        return None

    async def set_config_option(self, config_id: str, session_id: str, value: Any, **kwargs: Any) -> Any:
        from acp import RequestError

        raise RequestError.invalid_params({"message": f"bub_nb has no option {config_id!r}"})

    async def fork_session(self, *args: Any, **kwargs: Any) -> Any:
        from acp import RequestError

        raise RequestError.method_not_found("session/fork")

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        from acp import RequestError

        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    # -- sessions ---------------------------------------------------------------------------------

    def _session(self, session_id: str) -> Session:
        from acp import RequestError

        found = self.sessions.get(session_id) if isinstance(session_id, str) else None
        if found is None:
            raise RequestError.invalid_params(
                {"message": f"No session {session_id!r} here; session/new or session/load first"}
            )
        return found

    def _open(self, session_id: str, cwd: str, mcp_servers: Any, *, create: bool) -> Session:
        name = _checked(check_session_id, session_id)
        cwd = _checked(check_cwd, cwd)
        if (found := self.sessions.get(name)) is not None:
            return found
        try:
            tape = self.place.open(name, create=create)
        except BubNbError as exc:
            from acp import RequestError

            raise RequestError.invalid_params({"message": _one_line(exc)}) from None
        holder: list[Session] = []

        async def consent(code: str) -> Decision:
            return await holder[0].consent(code)

        tools = kernel_tools(NamespaceKernel({}, consent_to=consent))
        agent = Agent(tape, self.model, tools=tools, meta={"source": SOURCE, "cwd": cwd}, mcp=_mcp(mcp_servers))
        session = Session(name, cwd, tape, agent, self, cost=_tape_cost(tape))
        agent.tools = WatchedTools(agent.tools, session)
        holder.append(session)
        self.sessions[name] = session
        return session

    def shut(self) -> None:
        """The client left: every running turn ends interrupted, its partial answer kept."""
        self.gone = True
        for session in self.sessions.values():
            session.agent.abort()


def prompt_text(blocks: list[Any]) -> str:
    """A prompt's text: its text blocks, and embedded text resources the client sent (their content, never read
    from their URI); a resource link is named, never opened, so a prompt cannot make the server read a path."""
    parts: list[str] = []
    for block in blocks or ():
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource":
            resource = block.resource
            if getattr(resource, "text", None) is not None:
                parts.append(f"\n<resource uri={json.dumps(str(resource.uri))}>\n{resource.text}\n</resource>")
            else:
                parts.append(f"[binary resource {str(resource.uri)!r} not read]")
        elif kind == "resource_link":
            parts.append(f"[{block.name or 'resource'}: {block.uri}]")
        elif kind in ("image", "audio"):
            parts.append(f"[{kind} left out: bub_nb sends text]")
    return "".join(parts)


def _chunk(kind: str, text: str) -> Any:
    """A message or thought chunk of ``kind`` holding ``text``."""
    s = _schema()
    made = {"agent_message_chunk": s.AgentMessageChunk, "user_message_chunk": s.UserMessageChunk}
    return made.get(kind, s.AgentThoughtChunk)(session_update=kind, content=s.TextContentBlock(type="text", text=text))


def _checked(check: Any, value: Any) -> Any:
    from acp import RequestError

    try:
        return check(value)
    except SessionRefused as exc:
        raise RequestError.invalid_params({"message": _one_line(exc)}) from None


def _compaction(tape: Tape, before: int) -> dict[str, Any] | None:
    """The last summarising handoff written since entry ``before``: its anchor and the summary it kept."""
    for entry in reversed(tape.read(before + 1, kinds=("anchor",))):
        state = entry.payload.get("state") or {}
        if isinstance(state, dict) and isinstance(state.get("summary"), str) and state["summary"]:
            return {
                "compactionId": f"{tape.name}#{entry.id}",
                "status": "completed",
                "anchor": entry.payload.get("name"),
                "summary": state["summary"],
            }
    return None


def _tape_cost(tape: Tape) -> float | None:
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


def _mcp(servers: Any) -> Any:
    """The MCP servers the client passes, in a ``.mcp.json``'s shape (``None`` when it passes none)."""
    if not servers:
        return None
    config: dict[str, Any] = {}
    for server in servers:
        data = server.model_dump(by_alias=False) if hasattr(server, "model_dump") else dict(server)
        name = str(data.get("name") or f"server{len(config) + 1}")
        if data.get("url"):
            headers = {h["name"]: h["value"] for h in data.get("headers") or ()}
            config[name] = {"type": "http", "url": data["url"], "headers": headers}
        elif data.get("command"):
            env = {e["name"]: e["value"] for e in data.get("env") or ()}
            config[name] = {"command": data["command"], "args": list(data.get("args") or ()), "env": env}
    return {"mcpServers": config} if config else None


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


def _one_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


async def serve_stdio(place: Place, model: str | Model | None = None) -> None:
    """Serve ACP on stdin/stdout until the client leaves; a turn still running then ends interrupted."""
    import acp

    server = AcpServer(place, model)
    try:
        await acp.run_agent(server)
    finally:
        server.shut()


def serve(*, home: str | None = None, store: str | None = None, model: str | None = None) -> None:
    """``bub-nb acp serve``: resolve the model first (a bad spec is one line), then serve over stdio."""
    resolve_model(model)
    asyncio.run(serve_stdio(Place(home, store), model))
