"""bub_nb as an agent ACP clients drive (jupyter-ai, Zed, marimo, editors), on the protocol's official SDK.

A session is a tape (``tapes``); a prompt is a turn of an :class:`~bub_nb.agent.Agent` on it, streamed through
the agent's stream API, so its hooks, tools, memory and everything it writes are a notebook turn's; what the turn
tells the client is ``session``'s. ``session/cancel`` is the notebook's ■: the turn ends interrupted, its partial
answer kept, and so does a turn whose client leaves.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

from bub_nb.agent.acp.session import SOURCE, Session, WatchedTools, sdk_schema, tape_cost
from bub_nb.agent.acp.tapes import Place, SessionRefused, check_cwd, check_session_id, new_session_name, session_rows
from bub_nb.agent.kernel_tools import Decision, NamespaceKernel, kernel_tools
from bub_nb.agent.loop import Agent
from bub_nb.agent.models import Model, resolve_model
from bub_nb.agent.team import Team
from bub_nb.errors import BubNbError, NotHoldingError
from bub_nb.tape.names import MAIN_AGENT, agent_of_tape, agent_tape_name
from bub_nb.tape.redact import error_line


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

        s = sdk_schema()
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
        return sdk_schema().AuthenticateResponse()

    async def new_session(
        self, cwd: str, additional_directories: Any = None, mcp_servers: Any = None, **kwargs: Any
    ) -> Any:
        session = self._open(new_session_name(_checked(check_cwd, cwd)), cwd, mcp_servers, create=True)
        asyncio.get_running_loop().call_soon(lambda: asyncio.ensure_future(session.announce_commands()))
        return sdk_schema().NewSessionResponse(session_id=session.id)

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: Any = None, additional_directories: Any = None, **kwargs: Any
    ) -> Any:
        session = self._open(session_id, cwd, mcp_servers, create=False)
        await session.replay()
        await session.announce_commands()
        return sdk_schema().LoadSessionResponse()

    async def resume_session(
        self, session_id: str, cwd: str, additional_directories: Any = None, mcp_servers: Any = None, **kwargs: Any
    ) -> Any:
        session = self._open(session_id, cwd, mcp_servers, create=False)
        asyncio.get_running_loop().call_soon(lambda: asyncio.ensure_future(session.announce_commands()))
        return sdk_schema().ResumeSessionResponse()

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any) -> Any:
        s = sdk_schema()
        if cwd is not None:
            _checked(check_cwd, cwd)
        rows, following = await asyncio.to_thread(session_rows, self.place, cwd, cursor)
        return s.ListSessionsResponse(sessions=[s.SessionInfo(**row) for row in rows], next_cursor=following)

    async def close_session(self, session_id: str, **kwargs: Any) -> Any:
        session = self.sessions.pop(session_id, None)
        if session is not None:
            session.agent.abort()
        return sdk_schema().CloseSessionResponse()

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> Any:
        from acp import RequestError

        s = sdk_schema()
        session = self._session(session_id)
        text = prompt_text(prompt)
        if session.task is not None and not session.task.done():
            raise RequestError.invalid_request({"message": "A turn is already running in this session"})
        _check_holding(session)
        session.task = asyncio.ensure_future(session.run(text))
        try:
            turn = await asyncio.shield(session.task)
        except asyncio.CancelledError:  # the connection closed under the request: the turn ends, its partial kept
            session.agent.abort()
            with contextlib.suppress(BaseException):
                await session.task
            raise
        except BubNbError as exc:
            raise RequestError.invalid_request({"message": error_line(exc)}) from None
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

            raise RequestError.invalid_params({"message": error_line(exc)}) from None
        opened: list[Session] = []

        async def consent(code: str) -> Decision:
            return await opened[0].consent(code)

        tools = kernel_tools(NamespaceKernel({}, consent_to=consent))
        meta = {"source": SOURCE, "cwd": cwd}
        agent = Agent(tape, self.model, tools=tools, meta=meta, mcp=_mcp(mcp_servers), name=agent_of_tape(name))
        Team(tape).add(agent)  # the notebook's agents, read from its tapes: who holds the conversation is theirs
        session = Session(name, cwd, tape, agent, self, cost=tape_cost(tape))
        agent.tools = WatchedTools(agent.tools, session)
        opened.append(session)
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


def _check_holding(session: Session) -> None:
    """Refuse, in one line naming the holder, a prompt on the tape of an agent that handed the conversation away
    (to another agent of the notebook, in a kernel or another client): one holder writes the conversation's turns,
    and the refusal writes nothing."""
    from acp import RequestError

    team = session.agent.team
    try:
        team.check_may_run(session.agent.name or MAIN_AGENT)
    except NotHoldingError as exc:
        holder = team.holder() or MAIN_AGENT
        where = agent_tape_name(team.tape.name, holder)
        message = f"{error_line(exc)}; over ACP, session/load {where!r} continues as {holder!r}"
        raise RequestError.invalid_request({"message": message, "holder": holder, "holderSession": where}) from None


def _checked(check: Any, value: Any) -> Any:
    from acp import RequestError

    try:
        return check(value)
    except SessionRefused as exc:
        raise RequestError.invalid_params({"message": error_line(exc)}) from None


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
