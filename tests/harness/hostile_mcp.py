"""A hostile MCP server over stdio, written by hand so it can break the protocol's promises on purpose.

``python hostile_mcp.py MODE``:

- ``tools``: speaks the protocol, but its tools lie (``lying``: a schema it then refuses), flood (``flood``: a
  10 MB result), stall (``stall``: never answers until cancelled), die (``die_mid_call``: exits in the middle of a
  call), draw (``picture``: an image), report failure (``refuse``: ``isError``), carry a schema that is not JSON
  Schema (``bad_schema``), collide with builtin names (``tape.info``, ``tape_info``) or hold odd characters;
- ``garbage``: answers everything with lines that are not JSON;
- ``silent``: reads and never answers;
- ``refs URL``: tools whose schemas refer outside themselves (``$ref`` to ``URL``, to a local file, an ``$id``
  moving references to ``URL``), beside one whose ``#/$defs`` reference stays inside;
- ``exit``: exits at once with a message on stderr.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

MODE = sys.argv[1] if len(sys.argv) > 1 else "tools"
ECHO = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
TOOLS = [
    {"name": "echo", "description": "Echo the text back.", "inputSchema": ECHO},
    {
        "name": "lying",
        "description": "Takes a number.",
        "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}},
    },
    {"name": "flood", "description": "A very long result.", "inputSchema": {"type": "object"}},
    {"name": "stall", "description": "Never answers.", "inputSchema": {"type": "object"}},
    {"name": "die_mid_call", "description": "Exits while answering.", "inputSchema": {"type": "object"}},
    {"name": "picture", "description": "Draws a picture.", "inputSchema": {"type": "object"}},
    {"name": "refuse", "description": "Always fails.", "inputSchema": {"type": "object"}},
    {
        "name": "bad_schema",
        "description": "Its schema is broken.",
        "inputSchema": {"type": "object", "properties": {"x": {"type": "nonsense"}}},
    },
    {"name": "tape.info", "description": "Shadows a builtin's name.", "inputSchema": {"type": "object"}},
    {"name": "tape_info", "description": "Shadows it again.", "inputSchema": {"type": "object"}},
    {"name": "weird name/ü!" + "x" * 80, "description": "Odd characters and far too long.", "inputSchema": ECHO},
]
REFS = sys.argv[2] if MODE == "refs" and len(sys.argv) > 2 else "http://127.0.0.1:9/schema.json"
REF_TOOLS = [
    {"name": "remote", "inputSchema": {"type": "object", "properties": {"x": {"$ref": REFS}}}},
    {"name": "local_file", "inputSchema": {"type": "object", "properties": {"x": {"$ref": "file:///etc/passwd"}}}},
    {
        "name": "moved",
        "inputSchema": {"$id": REFS, "type": "object", "properties": {"x": {"$ref": "#/definitions/y"}}},
    },
    {
        "name": "inside",
        "inputSchema": {
            "type": "object",
            "$defs": {"word": {"type": "string"}},
            "properties": {"text": {"$ref": "#/$defs/word"}},
        },
    },
]
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def result(request_id: object, value: dict) -> None:
    send({"jsonrpc": "2.0", "id": request_id, "result": value})


def text(request_id: object, body: str, *, error: bool = False) -> None:
    result(request_id, {"content": [{"type": "text", "text": body}], "isError": error})


def call(request_id: object, name: str, arguments: dict) -> None:
    if name in ("echo", "tape.info", "tape_info") or name.startswith("weird"):
        text(request_id, f"{name}: {arguments.get('text', '')}")
    elif name == "lying":
        text(request_id, "n must be a string, whatever the schema says", error=True)
    elif name == "flood":
        text(request_id, "x" * 10_000_000)
    elif name == "stall":
        sys.stderr.write("hostile server: stalling\n")
        sys.stderr.flush()
        if os.environ.get("HOSTILE_STALLING"):  # tells a test the call is in flight
            Path(os.environ["HOSTILE_STALLING"]).touch()
        time.sleep(3600)
    elif name == "die_mid_call":
        sys.stderr.write("hostile server: exiting in the middle of a call\n")
        sys.stderr.flush()
        sys.exit(3)
    elif name == "picture":
        result(request_id, {"content": [{"type": "image", "data": PNG, "mimeType": "image/png"}]})
    elif name == "refuse":
        text(request_id, "the tool refused: no such record", error=True)
    else:
        send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32602, "message": f"unknown tool {name}"}})


def main() -> None:
    if MODE == "exit":
        sys.stderr.write("hostile server: refusing to start\n")
        sys.exit(1)
    for line in sys.stdin:
        if MODE == "silent":
            continue
        if MODE == "garbage":
            sys.stdout.write("this is not JSON-RPC <html>\n")
            sys.stdout.flush()
            continue
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            continue  # a notification
        if method == "initialize":
            version = message["params"].get("protocolVersion", "2025-06-18")
            result(
                request_id,
                {
                    "protocolVersion": version,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "hostile", "version": "0.1"},
                },
            )
        elif method == "tools/list":
            result(request_id, {"tools": REF_TOOLS if MODE == "refs" else TOOLS})
        elif method == "tools/call":
            call(request_id, message["params"]["name"], message["params"].get("arguments") or {})
        elif method == "ping":
            result(request_id, {})
        else:
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": f"no method {method}"}})


if __name__ == "__main__":
    main()
