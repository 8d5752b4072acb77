"""The tape served over MCP: another agent (Claude Code, Codex, an IDE) reads tapes, views, anchors, search and what
a turn saw, through the official SDK's server.

Read-only unless started with ``allow_write``; then ``handoff`` and ``append`` go through the checks the magics
use. Retracted entries are marked, redacted text is what the tape holds, and on PostgreSQL the server runs as the
role its DSN logs in with, so row-level security decides what a client sees. Every answer is bounded.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bub_nb.errors import BubNbError, TapeAccessError, TapeNameError, TapeNotFoundError
from bub_nb.tape import Tape, TapeEntry, open_tape
from bub_nb.tape.names import owner_qualified, validate_tape_name

MAX_ENTRIES = 200
MAX_SEARCH = 100
MAX_TEXT = 4000
LISTED_TAPES = 100
LISTED_ANCHORS = 20
"""A client lists each tape's last anchors as resources, of the first tapes by name; any entry or anchor is read by
its address whether listed or not."""
INSTRUCTIONS = (
    "Read-only access to bub_nb / Bub tapes: append-only logs of agent conversations. list_tapes names them; "
    "anchors marks phases; view gives the messages a model receives in a mode ('last', 'full', 'phases', "
    "'window:N', an anchor name); search finds entries; entries reads them by id; turn rebuilds what one turn "
    "sent; retention says what a handoff's summary kept. Entries are addressed tape://<tape>/entry/<id>."
)


class TapeReader:
    """The tapes of one home or store, opened by name; what the server's tools call."""

    def __init__(self, home: str | Path | None = None, store: str | None = None) -> None:
        self.home = None if home is None else Path(home).expanduser()
        self.store = store
        self._open: dict[str, Tape] = {}  # a tape's index is read once and kept up to date as the tape grows

    def names(self) -> list[str]:
        if self.store is not None:
            from bub_nb.tape.stores.resolve import resolve_store

            store = resolve_store(self.store)
            assert store is not None
            return sorted(store.list_tapes())
        from bub_nb.tape import FileTapeStore
        from bub_nb.tape.locations import tapes_home

        folder = tapes_home(self.home)
        return sorted(
            name for name in FileTapeStore(folder).list_tapes() if not (folder / f"{name}.jsonl").is_symlink()
        )

    def tape(self, name: str) -> Tape:
        if (found := self._open.get(name)) is not None:
            return found
        self._open[name] = self._opened(served_name(name, database=self.store is not None))
        return self._open[name]

    def _opened(self, name: str) -> Tape:
        try:
            if self.store is not None:
                return open_tape(name, store=self.store, create=False)
            self._check_inside(name)
            return open_tape(name, home=self.home, create=False)
        except TapeNotFoundError:
            raise TapeNotFoundError(f"No tape named {name!r} here; list_tapes names the tapes") from None

    def _check_inside(self, name: str) -> None:
        """Refuse a tape whose file, or whose tapes folder, is a link leading out of the home."""
        from bub_nb.tape.locations import bub_home, tapes_home

        home, folder = bub_home(self.home).resolve(), tapes_home(self.home)
        if folder.exists() and not folder.resolve().is_relative_to(home):
            raise TapeAccessError(f"The tapes folder {str(folder)!r} leads outside the served home; nothing is served")
        if (folder / f"{name}.jsonl").is_symlink():
            raise TapeAccessError(f"Tape {name!r} is a symbolic link; a served home serves only its own files")


def served_name(name: object, *, database: bool = False) -> str:
    """``name`` if it is a plain tape name (on a database also ``owner/name``); a path, an archive, ``..`` or an
    absolute name is refused in one line, so a client never reaches a file outside the home or store."""
    if not isinstance(name, str):
        raise TapeNameError(f"A tape is named by a string, got {type(name).__name__}")
    parts = name.split("/", 1) if database and owner_qualified(name) else [name]
    try:
        for part in parts:
            validate_tape_name(part)
    except TapeNameError:
        raise TapeNameError(
            f"Tape {name!r} is not a plain tape name; this server opens tapes by the names list_tapes gives, "
            "never a path, an archive or a name with '/' or '..'"
        ) from None
    return name


def entry_json(tape: Tape, entry: TapeEntry, retracted: frozenset[int]) -> dict[str, Any]:
    """An entry as a client reads it: its fields, its address, whether it was retracted, long text cut."""
    data = entry.to_dict()
    text = json.dumps(data["payload"], ensure_ascii=False)
    if len(text) > MAX_TEXT:
        data["payload"] = {"text": text[:MAX_TEXT], "cut": f"{len(text) - MAX_TEXT:,} more characters"}
    data["address"] = tape.address(entry)
    if entry.id in retracted:
        data["retracted"] = True
    return data


def build_server(reader: TapeReader, *, allow_write: bool = False) -> Any:
    """An ``MCPServer`` over ``reader``'s tapes (the ``[mcp]`` extra's SDK)."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import Resource, ToolAnnotations

    import bub_nb

    class TapeServer(MCPServer):
        async def list_resources(self) -> list[Resource]:
            """The tapes' anchors at their addresses, so a client that lists resources (Claude Code's
            ``@`` mentions) finds the phases; the templates below read any address."""
            listed = list(await super().list_resources())
            for name in reader.names()[:LISTED_TAPES]:
                for anchor in reader.tape(name).anchors(limit=LISTED_ANCHORS):
                    summary = (anchor.state or {}).get("summary")
                    listed.append(
                        Resource(
                            uri=f"tape://{name}/anchor/{anchor.name}", name=f"{name}: {anchor.name}",
                            description=str(summary)[:200] if summary else f"anchor #{anchor.id} of tape {name}",
                            mime_type="application/json",
                        )
                    )  # fmt: skip
            return listed

    server: Any = TapeServer("bub_nb", version=bub_nb.__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    # Clients read these hints (Claude Code logs a call to a tool without them as not read-only); a write
    # appends and never destroys, and appending twice writes twice.
    reads = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    writes = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)

    def tool(function: Callable[..., Any], annotations: ToolAnnotations = reads) -> Any:
        """Register ``function``; its BubNbError reaches the client as an error result saying it in one line
        (the SDK hides any other exception's text)."""

        @functools.wraps(function)
        def said(*args: Any, **kwargs: Any) -> Any:
            try:
                return function(*args, **kwargs)
            except BubNbError as exc:
                raise ToolError(str(exc).splitlines()[0]) from None

        return server.tool(annotations=annotations)(said)

    @tool
    def list_tapes(limit: int = 100) -> list[dict[str, Any]]:
        """The tapes here, each with its entry and anchor counts, its last anchor and the sidecar tapes Bub mounted
        on it (``<tape>__sidecar__<name>``, listed under it, opened by their full name)."""
        from bub_nb.tape.sidecars import owners_and_sidecars

        rows = []
        names = reader.names()
        for name, sidecars in list(owners_and_sidecars(names).items())[: max(1, min(limit, 1000))]:
            row: dict[str, Any] = {"tape": name, "entries": 0, "anchors": 0, "last_anchor": None}
            if name in names:
                info = reader.tape(name).info()
                row.update(entries=info.entries, anchors=info.anchors, last_anchor=info.last_anchor)
            rows.append({**row, "sidecars": sidecars})
        return rows

    @tool
    def anchors(tape: str, limit: int = 20) -> list[dict[str, Any]]:
        """The tape's anchors, newest last: each phase's name, entry id and state (a handoff's summary)."""
        found = reader.tape(tape).anchors(limit=max(1, min(limit, MAX_ENTRIES)))
        return [{"id": a.id, "name": a.name, "date": a.date, "state": a.state} for a in found]

    @tool
    def view(tape: str, mode: str = "last") -> dict[str, Any]:
        """The messages a model would receive from the tape in ``mode`` (retracted entries left out)."""
        from bub_nb.context import parse_mode
        from bub_nb.context.view import build_view

        built = build_view(reader.tape(tape), parse_mode(mode))
        messages = list(built.messages)[-MAX_ENTRIES:]
        return {
            "mode": built.mode,
            "entry_ids": list(built.entry_ids),
            "tokens": built.total_tokens,
            "messages": messages,
            "left_out_retracted": list(built.retracted),
        }

    @tool
    def search(query: str, tape: str | None = None, limit: int = 20) -> list[dict[str, Any]]:
        """Entries whose text holds ``query``, newest first, on one tape or on every tape."""
        limit = max(1, min(limit, MAX_SEARCH))
        found: list[dict[str, Any]] = []
        for name in [tape] if tape else reader.names():
            opened = reader.tape(name)
            hits = list(opened.search(query, limit=limit))
            retracted = opened.retracted_among(e.id for e in hits)
            found += [entry_json(opened, entry, retracted) for entry in hits]
            if len(found) >= limit:
                break
        return found[:limit]

    @tool
    def entries(tape: str, start: int, end: int | None = None) -> list[dict[str, Any]]:
        """Entries ``start`` to ``end`` (inclusive; one entry without ``end``), at most 200."""
        opened = reader.tape(tape)
        stop = start if end is None else end
        if start < 1 or stop < start:
            raise BubNbError(f"entries need 1 <= start <= end, got {start}..{stop}")
        stop = min(stop, start + MAX_ENTRIES - 1)
        read = opened.read(start, stop + 1)
        retracted = opened.retracted_among(e.id for e in read)
        return [entry_json(opened, entry, retracted) for entry in read]

    @tool
    def turn(tape: str, run: str = "-1") -> dict[str, Any]:
        """What one turn sent to its model, rebuilt: its system prompt and messages (run id, entry id or -1)."""
        from bub_nb.context.turns import parse_run, view_of_turn

        seen = view_of_turn(reader.tape(tape), parse_run(run))
        return {"run_id": seen.run_id, "system_prompt": seen.system_prompt, "messages": list(seen.messages)}

    @tool
    def retention(tape: str, anchor: str) -> list[dict[str, Any]]:
        """What the summary of ``anchor`` kept of the phase it closed: one row per number, path, decision..."""
        from bub_nb.context.retention import retention as kept

        frame = kept(reader.tape(tape), anchor)
        return json.loads(frame.to_json(orient="records"))

    if allow_write:

        @functools.partial(tool, annotations=writes)
        def handoff(tape: str, name: str, summary: str | None = None, next_steps: str | None = None) -> list[int]:
            """Write an anchor on the tape: the next view starts there and carries this state."""
            state = {k: v for k, v in (("summary", summary), ("next_steps", next_steps)) if v}
            return [entry.id for entry in reader.tape(tape).handoff(name, state)]

        @functools.partial(tool, annotations=writes)
        def append(tape: str, content: str, role: str = "user") -> int:
            """Append one message to the tape (role user or assistant)."""
            if role not in ("user", "assistant"):
                raise BubNbError(f"role must be 'user' or 'assistant', got {role!r}")
            return reader.tape(tape).append_message({"role": role, "content": content}).id

    @server.resource("tape://{tape}/entry/{entry_id}", mime_type="application/json")
    def entry_resource(tape: str, entry_id: str) -> str:
        opened = reader.tape(tape)
        entry = opened.resolve(f"tape://{tape}/entry/{entry_id}")
        return json.dumps(entry_json(opened, entry, opened.retracted_among([entry.id])), ensure_ascii=False)

    @server.resource("tape://{tape}/anchor/{+name}", mime_type="application/json")
    def anchor_resource(tape: str, name: str) -> str:
        opened = reader.tape(tape)
        entry = opened.resolve(f"tape://{tape}/anchor/{name}")
        return json.dumps(entry_json(opened, entry, opened.retracted_among([entry.id])), ensure_ascii=False)

    return server


TOKEN_VARIABLE = "BUB_NB_MCP_TOKEN"
"""Where ``mcp serve --http`` reads the secret clients present, when no ``--token-file`` names one."""
MIN_TOKEN = 16
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def serve(
    *,
    home: str | None = None,
    store: str | None = None,
    http: str | None = None,
    allow_write: bool = False,
    token_file: str | None = None,
    allow_remote: bool = False,
    allowed_hosts: tuple[str, ...] = (),
) -> None:
    """Run the server until its client leaves (stdio) or it is stopped (``http="HOST:PORT"``).

    Over HTTP every request must carry ``Authorization: Bearer <token>``: the token is read from ``token_file``,
    else ``$BUB_NB_MCP_TOKEN``, else made here and printed once to stderr. The Host and Origin of every request are
    checked; a bind to anything but loopback is refused unless ``allow_remote`` (then a warning is printed).
    """
    reader = TapeReader(home, store)
    if http is None:
        build_server(reader, allow_write=allow_write).run("stdio")
        return
    host, port = http_address(http)
    if host not in LOOPBACK and not allow_remote:
        raise BubNbError(
            f"--http {http}: {host} is not a loopback address, so other machines could reach the tapes; "
            "bind 127.0.0.1, or add --allow-remote if that is meant"
        )
    token = serving_token(token_file)
    app = http_app(build_server(reader, allow_write=allow_write), host, port, token, allowed_hosts)
    import sys

    import uvicorn

    if host not in LOOPBACK:
        print(
            f"bub-nb mcp serve: warning: serving on {host}:{port}, reachable beyond this machine; "
            "anyone with the token can read the tapes, and the traffic is not encrypted",
            file=sys.stderr,
        )
    if token_file is None and not os.environ.get(TOKEN_VARIABLE):
        print(
            f"bub-nb mcp serve: clients send the header 'Authorization: Bearer {token}' "
            f"(printed once; set ${TOKEN_VARIABLE} or --token-file to choose it)",
            file=sys.stderr,
            flush=True,
        )
    uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning")).run()


def http_address(http: str) -> tuple[str, int]:
    host, _, port = http.rpartition(":")
    if not port.isdigit():
        raise BubNbError(f"--http takes HOST:PORT, e.g. 127.0.0.1:8765, got {http!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def serving_token(token_file: str | None) -> str:
    """The secret HTTP clients must present: the file's first line, else ``$BUB_NB_MCP_TOKEN``, else a new one."""
    import secrets

    if token_file is not None:
        try:
            token = Path(token_file).expanduser().read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as error:
            raise BubNbError(f"--token-file {token_file!r} cannot be read: {error}") from None
        where = f"--token-file {token_file!r}"
    else:
        token = os.environ.get(TOKEN_VARIABLE, "").strip()
        where = f"${TOKEN_VARIABLE}"
        if not token:
            return secrets.token_urlsafe(32)
    if len(token) < MIN_TOKEN or any(char.isspace() for char in token):
        raise BubNbError(f"The token in {where} must be one word of at least {MIN_TOKEN} characters")
    return token


def http_app(server: Any, host: str, port: int, token: str, allowed_hosts: tuple[str, ...] = ()) -> Any:
    """The SDK's streamable HTTP app with its Host/Origin checks always on, behind a bearer-token check."""
    from mcp.server.transport_security import TransportSecuritySettings

    names = [*LOOPBACK, *([host] if host not in ("0.0.0.0", "::") else []), *allowed_hosts]
    shown = [f"[{name}]" if ":" in name else name for name in dict.fromkeys(names)]
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{name}:{port}" for name in shown],
        allowed_origins=[f"{scheme}://{name}:{port}" for name in shown for scheme in ("http", "https")],
    )
    return BearerToken(server.streamable_http_app(transport_security=security, host=host), token)


class BearerToken:
    """ASGI middleware: an HTTP request without ``Authorization: Bearer <token>`` is answered 401, unread."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        import hmac

        if scope["type"] == "http":
            given = dict(scope.get("headers") or ()).get(b"authorization", b"")
            if not hmac.compare_digest(given, self._expected):
                body = b'{"error": "unauthorized: send Authorization: Bearer <the token mcp serve printed>"}'
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b'Bearer realm="bub_nb"'),
                            (b"content-length", str(len(body)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)
