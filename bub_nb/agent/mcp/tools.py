"""A server's tools as bub_nb tools (``mcp.<server>.<tool>``), and what a call returns as text the model reads."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from typing import Any

from bub_nb.agent.mcp.connection import Connection, ServerTool
from bub_nb.agent.tools import Tool
from bub_nb.errors import McpError, ToolError

PREFIX = "mcp"
MAX_NAME = 64
_ODD = re.compile(r"[^A-Za-z0-9_-]")
_DESCRIPTION_CHARS = 2000


def tool_name(server: str, tool: str, taken: Iterable[str] = ()) -> str:
    """``mcp.<server>.<tool>`` within 64 characters, odd characters as ``_``; a name cut short or already
    ``taken`` (two tools that differ only in odd characters) ends in a short hash of the server's own name."""
    clean = _ODD.sub("_", tool).strip("_") or "tool"
    name = f"{PREFIX}.{server}.{clean}"
    taken = {item.replace(".", "_") for item in taken}
    if len(name) <= MAX_NAME and name.replace(".", "_") not in taken and clean == tool:
        return name
    digest = hashlib.sha256(tool.encode()).hexdigest()[:6]
    room = MAX_NAME - len(f"{PREFIX}.{server}.") - len(digest) - 1
    return f"{PREFIX}.{server}.{clean[:room]}-{digest}"


def could_name(server: str, pattern: str) -> bool:
    """Whether a ``--tools`` name or glob could select a tool of ``server`` before its tools are known: its text up
    to the first wildcard agrees with ``mcp.<server>.`` (or the wire's ``mcp_<server>_``) as far as both go."""
    literal = re.split(r"[*?\[]", pattern, maxsplit=1)[0]
    wildcard = literal != pattern
    for prefix in (f"{PREFIX}.{server}.", f"{PREFIX}_{server}_"):
        if literal.startswith(prefix) or (wildcard and prefix.startswith(literal)):
            return True
    return False


def schema_problem(schema: Any) -> str | None:
    """Why a server's input schema cannot be used to check arguments (``None`` when it can)."""
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        return f"its input schema is not a JSON object schema: {json.dumps(schema)[:80]}"
    if (outside := outside_reference(schema)) is not None:
        return f"its input schema refers to {outside[:120]!r} outside itself; only '#/...' references are followed"
    from bub_nb.agent.tools.registry import compile_schema

    try:
        compile_schema(schema)
    except Exception as exc:  # fastjsonschema raises several kinds for schemas it cannot compile
        return f"its input schema is not valid JSON Schema: {' '.join(str(exc).split())[:120]}"
    return None


MAX_SCHEMA_DEPTH = 64


def outside_reference(schema: Any) -> str | None:
    """The first ``$ref`` in ``schema`` that is not a ``#...`` pointer into it, or an ``$id`` that would move where
    references resolve (``None`` when there is neither); a schema nested past 64 levels counts as one."""
    stack: list[tuple[Any, int]] = [(schema, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_SCHEMA_DEPTH:
            return f"(a schema nested past {MAX_SCHEMA_DEPTH} levels)"
        if isinstance(node, dict):
            for key in ("$ref", "$id", "id", "$dynamicRef", "$recursiveRef"):
                value = node.get(key)
                if (
                    isinstance(value, str)
                    and not value.startswith("#")
                    and (key != "id" or "/" in value or ":" in value)
                ):
                    return value
            stack += [(value, depth + 1) for value in node.values()]
        elif isinstance(node, list):
            stack += [(value, depth + 1) for value in node]
    return None


def server_tools(connection: Connection, taken: Iterable[str] = ()) -> tuple[list[Tool], list[str]]:
    """The connection's tools as :class:`Tool` objects, and one line for each tool left out (and why)."""
    made: list[Tool] = []
    skipped: list[str] = []
    names = set(taken)
    for listed in connection.tools:
        if problem := schema_problem(listed.input_schema):
            skipped.append(f"{listed.name!r}: {problem}")
            continue
        name = tool_name(connection.spec.name, listed.name, names)
        names.add(name)
        made.append(_tool(connection, listed, name))
    return made, skipped


def _tool(connection: Connection, listed: ServerTool, name: str) -> Tool:
    origin = {"server": connection.spec.name, "tool": listed.name, "protocol": connection.protocol_version}

    async def call(**arguments: Any) -> str:
        try:
            result = await connection.call(listed.name, arguments)
        except McpError as exc:
            raise ToolError(str(exc)) from None
        text = result_text(result)
        if result.is_error:
            raise ToolError(text or f"{listed.name} reported an error with no text")
        return text

    description = " ".join(listed.description.split())[:_DESCRIPTION_CHARS] or f"{listed.name} ({connection.spec.name})"
    schema = dict(listed.input_schema)
    schema.setdefault("type", "object")
    return Tool(name, description, schema, call, origin={"mcp": origin})


def result_text(result: Any) -> str:
    """The text of a ``CallToolResult``: text parts as they are, other parts as one line naming what they hold.

    Chat completions take only text in a tool's result, so an image or audio part is a placeholder saying its
    type and size; structured content stands in when there are no parts.
    """
    parts = [_part_text(part) for part in result.content or []]
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, default=str))
    return "\n".join(part for part in parts if part)


def _part_text(part: Any) -> str:
    kind = getattr(part, "type", "")
    if kind == "text":
        return str(part.text)
    if kind in ("image", "audio"):
        size = len(part.data or "") * 3 // 4  # base64
        return f"[{kind} {part.mime_type}, {size:,} bytes: not shown; this model reads text results only]"
    if kind == "resource_link":
        return f"[resource {part.uri}{': ' + part.name if getattr(part, 'name', None) else ''}]"
    if kind == "resource":
        contents = part.resource
        text = getattr(contents, "text", None)
        if text is not None:
            return str(text)
        return f"[resource {contents.uri} ({getattr(contents, 'mime_type', None) or 'binary'}): not shown]"
    return f"[{kind or type(part).__name__} content: not shown]"
