"""A server's tool schemas never make bub_nb fetch anything: a ``$ref`` to a URL or a file, or an ``$id`` moving
references elsewhere, leaves that tool out with a line saying why, and no request reaches the URL; a reference
inside the schema works. A server that never answers its start is given up on after the start timeout."""

from __future__ import annotations

import http.server
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from bub_nb.agent.mcp import McpServers, servers_from

pytest.importorskip("mcp")

HOSTILE = str(Path(__file__).parents[1] / "harness" / "hostile_mcp.py")


@pytest.fixture
def listener() -> Iterator[tuple[str, list[str]]]:
    """A web server on 127.0.0.1 that records every path asked of it and serves a schema."""
    asked: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            body = b'{"type": "string", "definitions": {"y": {"type": "string"}}}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return None

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/schema.json", asked
    finally:
        server.shutdown()
        server.server_close()


def test_a_schema_referring_outside_itself_causes_no_request_and_leaves_its_tool_out(
    listener: tuple[str, list[str]],
) -> None:
    url, asked = listener
    config = {"refs": {"command": sys.executable, "args": [HOSTILE, "refs", url]}}
    with McpServers(servers_from(config, source="python"), start_seconds=30) as servers:
        tools, problems = servers.tools()
        (status,) = servers.status()
    assert [tool.name for tool in tools] == ["mcp.refs.inside"]
    assert problems == []
    skipped = "\n".join(status.skipped)
    for name in ("remote", "local_file", "moved"):
        assert f"'{name}'" in skipped
    assert url in skipped and "file:///etc/passwd" in skipped and "outside itself" in skipped
    assert asked == []


def test_a_server_that_never_answers_its_start_is_given_up_on_in_one_line() -> None:
    config = {"mute": {"command": sys.executable, "args": [HOSTILE, "silent"]}}
    with McpServers(servers_from(config, source="python"), start_seconds=3) as servers:
        tools, problems = servers.tools()
    assert tools == [] and len(problems) == 1
    assert "did not answer within 3 s of starting" in problems[0] and "\n" not in problems[0]
