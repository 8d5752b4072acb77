"""MCP servers as configured: a command to start (stdio) or a URL to reach (streamable HTTP).

The shape is the ``mcpServers`` object Claude Code, Claude Desktop, Cursor and VS Code read from a
``.mcp.json``::

    {"mcpServers": {
        "time": {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}},
        "docs": {"type": "http", "url": "http://127.0.0.1:8000/mcp", "headers": {"Authorization": "Bearer …"}}
    }}

Every field is checked before a server is kept, so a bad entry is one line naming it, never a half-added server.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from bub_nb.errors import McpError
from bub_nb.tape.redact import remember_secret, secret_name

SERVER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$")
MCP_JSON = ".mcp.json"
#: Where a server came from: typed by the user (``%mcp add``, ``%config``, Python) or read from a ``.mcp.json``,
#: which someone else may have written and so is approved before it starts.
Source = Literal["added", "config", "python", "mcp.json"]


@dataclass(frozen=True)
class ServerSpec:
    """One MCP server: ``command``/``args``/``env``/``cwd`` for stdio, or ``url``/``headers`` for HTTP."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    source: Source = "added"
    origin: str | None = None  # the .mcp.json it was read from

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "http" if self.url else "stdio"

    @property
    def needs_approval(self) -> bool:
        """A server from a ``.mcp.json`` is asked about once; one the user typed is theirs."""
        return self.source == "mcp.json"

    def describe(self) -> str:
        """The command line or URL, as a person reads it (header values left out: they may be secrets)."""
        if self.url:
            return self.url + (f" (headers: {', '.join(sorted(self.headers))})" if self.headers else "")
        return " ".join([str(self.command), *self.args])

    def fingerprint(self) -> str:
        """What an approval is for: the command, every argument, every ``env`` entry, the ``cwd``, the URL and
        its headers; a change to any of them is asked about again."""
        config = {
            "command": self.command,
            "args": list(self.args),
            "env": dict(self.env),
            "cwd": self.cwd,
            "url": self.url,
            "headers": dict(self.headers),
        }
        text = json.dumps([self.origin, self.name, config], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()

    def approval_text(self) -> str:
        """Everything an approval covers, one fact a line: the program, each argument, the folder it starts in
        and every ``env`` entry, those that change which program or library runs marked; for a URL, the header
        names. A value under a secret-looking name shows only its length."""
        if self.url:
            lines = [f"url: {self.url}"]
            lines += [
                f"header {name}: <{len(value)} characters, not shown>" for name, value in sorted(self.headers.items())
            ]
            return "\n".join(lines)
        lines = [f"command: {self.command}"]
        lines += [f"arg {number}: {shlex.quote(arg)}" for number, arg in enumerate(self.args, start=1)]
        lines.append(f"cwd: {self.cwd}" if self.cwd else "cwd: (the kernel's working folder)")
        for name, value in sorted(self.env.items()):
            shown = f"<{len(value)} characters, not shown>" if secret_name(name) else shlex.quote(value)
            mark = "  <- changes which program or library runs" if runs_code(name) else ""
            lines.append(f"env {name}={shown}{mark}")
        if not self.env:
            lines.append("env: (none)")
        return "\n".join(lines)


CODE_VARIABLES = frozenset(
    {
        "PATH", "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "PYTHONSAFEPATH",
        "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "NODE_OPTIONS", "NODE_PATH", "BASH_ENV", "ENV",
        "PERL5LIB", "PERL5OPT", "RUBYOPT", "RUBYLIB", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "UV_PYTHON",
    }
)  # fmt: skip
"""Environment variables that choose which program, library or startup code runs: flagged in an approval."""

PLAIN_HEADERS = frozenset({"accept", "content-type", "user-agent", "accept-language", "mcp-protocol-version"})
"""Headers whose values are not secrets; every other header value joins the redaction set."""


def runs_code(name: str) -> bool:
    """Whether the environment variable ``name`` changes which program or library a process runs."""
    upper = name.upper()
    return upper in CODE_VARIABLES or upper.startswith(("DYLD_", "LD_"))


def remember_secrets(spec: ServerSpec) -> ServerSpec:
    """Add the secrets ``spec`` carries to the redaction set: every header value (and a bearer token on its own)
    but the plain ones, every ``env`` value under a secret-looking name or shaped like a token; then ``spec``."""
    for name, value in spec.headers.items():
        if name.lower() not in PLAIN_HEADERS:
            remember_secret(value, *value.split()[1:2])
    for name, value in spec.env.items():
        if secret_name(name) or (len(value) >= 16 and _TOKEN_SHAPED.fullmatch(value)):
            remember_secret(value)
    return spec


_TOKEN_SHAPED = re.compile(r"[A-Za-z0-9_\-.+=~]+")


def check_name(name: str) -> str:
    if not isinstance(name, str) or not SERVER_NAME.match(name):
        raise McpError(
            f"MCP server name {name!r} must be 1-32 letters, digits, '_' or '-', starting with a letter or digit"
        )
    return name


def server_spec(name: str, config: Any, *, source: Source = "added", origin: str | None = None) -> ServerSpec:
    """A :class:`ServerSpec` from one ``mcpServers`` entry, every field checked."""
    check_name(name)
    if not isinstance(config, Mapping):
        raise McpError(f"MCP server {name!r}: its entry must be an object with 'command' or 'url', got {config!r}")
    kind = config.get("type", "http" if "url" in config else "stdio")
    known = {"type", "command", "args", "env", "cwd", "url", "headers", "description"}
    if unknown := sorted(set(config) - known):
        raise McpError(f"MCP server {name!r}: unknown field(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    if kind in ("http", "streamable-http", "streamableHttp"):
        url = config.get("url")
        if not isinstance(url, str) or not re.match(r"^https?://[^\s/]+", url):
            raise McpError(f"MCP server {name!r}: 'url' must be an http:// or https:// address, got {url!r}")
        headers = _strings(name, "headers", config.get("headers", {}))
        return remember_secrets(ServerSpec(name, url=url, headers=headers, source=source, origin=origin))
    if kind == "sse":
        raise McpError(f"MCP server {name!r}: the SSE transport is deprecated; use the server's streamable HTTP URL")
    if kind != "stdio":
        raise McpError(f"MCP server {name!r}: type must be 'stdio' or 'http', got {kind!r}")
    command = config.get("command")
    if not isinstance(command, str) or not command.strip():
        raise McpError(f"MCP server {name!r}: 'command' must be the program to start, got {command!r}")
    args = config.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise McpError(f"MCP server {name!r}: 'args' must be a list of strings, got {args!r}")
    cwd = config.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise McpError(f"MCP server {name!r}: 'cwd' must be a folder, got {cwd!r}")
    env = _strings(name, "env", config.get("env", {}))
    spec = ServerSpec(name, command=command, args=tuple(args), env=env, cwd=cwd, source=source, origin=origin)
    return remember_secrets(spec)


def _strings(name: str, key: str, value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise McpError(f"MCP server {name!r}: {key!r} must map names to strings, got {value!r}")
    return dict(value)


def servers_from(value: Any, *, source: Source, origin: str | None = None) -> list[ServerSpec]:
    """Servers from an ``mcpServers`` mapping, or from a whole ``.mcp.json`` object holding one."""
    if isinstance(value, Mapping) and "mcpServers" in value:
        value = value["mcpServers"]
    if not isinstance(value, Mapping):
        where = f" in {origin}" if origin else ""
        raise McpError(f"MCP servers{where} must be an object of name -> server, got {type(value).__name__}")
    return [server_spec(str(name), config, source=source, origin=origin) for name, config in value.items()]


def read_mcp_json(folder: str | Path) -> list[ServerSpec]:
    """The servers of ``folder/.mcp.json`` (none when there is no such file); a file that is not JSON is one line."""
    path = Path(folder) / MCP_JSON
    if not path.is_file():
        return []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise McpError(f"{path} could not be read as JSON: {exc}") from None
    return servers_from(data, source="mcp.json", origin=str(path.resolve()))
