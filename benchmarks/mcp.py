"""What MCP costs: one tool call through bub_nb against the SDK's client calling the same server directly, and
``bub-nb mcp serve``'s search on a large tape against ``Tape.search`` in process.

    python benchmarks/mcp.py --size 1000000

The call baseline is the official SDK's ``Client.call_tool`` on its own event loop, the fastest way to reach a
stdio server; bub_nb adds the tool registry (schema check, result text) and the crossing from the turn's loop to
the connection's. The search baseline is the same search in process: the server adds the protocol and JSON.
"""

# ruff: noqa: E402  (the SDK is imported after this script's folder leaves sys.path: see below)
from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _common import load, ms, print_table
from corpus import cached_tape

# This script is named for what it measures, which is also the SDK's name: its own folder must not shadow the SDK.
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != Path(__file__).resolve().parent]

from bub_nb.agent.eventloop import run_sync
from bub_nb.agent.mcp import McpServers, servers_from
from bub_nb.tape import open_tape

TARGET_CALL_RATIO = 1.2
ECHO_SERVER = '''
from mcp.server.mcpserver import MCPServer

server = MCPServer("echo", log_level="WARNING")


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


server.run("stdio")
'''


def _per_call(calls: int, call: object) -> float:
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        call()  # type: ignore[operator]
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def call_rows(calls: int) -> list[list[str]]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    script = Path(tempfile.mkdtemp()) / "echo_server.py"
    script.write_text(ECHO_SERVER)
    config = {"echo": {"command": sys.executable, "args": [str(script)]}}

    async def direct() -> float:
        async with Client(StdioServerParameters(command=sys.executable, args=[str(script)])) as client:
            for _ in range(20):
                await client.call_tool("echo", {"text": "warm"})
            times = []
            for _ in range(calls):
                started = time.perf_counter()
                await client.call_tool("echo", {"text": "hello"})
                times.append(time.perf_counter() - started)
            return statistics.median(times)

    baseline = asyncio.run(direct())
    with McpServers(servers_from(config, source="python")) as servers:
        (echo,), _ = servers.tools()
        for _ in range(20):
            run_sync(echo.run({"text": "warm"}))
        ours = _per_call(calls, lambda: run_sync(echo.run({"text": "hello"})))
    ratio = ours / baseline
    return [["one tool call (median)", ms(ours), ms(baseline), f"{ratio:.2f}x", f"<= {TARGET_CALL_RATIO}x"]]


def search_rows(size: int, runs: int) -> list[list[str]]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    home = Path(tempfile.mkdtemp()) / "home"
    (home / "tapes").mkdir(parents=True)
    (home / "tapes" / "large.jsonl").symlink_to(cached_tape(size))  # the benchmark's tape, in a Bub home
    tape = open_tape("large", home=home)
    query = "needle-not-there"
    inprocess = statistics.median(_time(lambda: tape.search(query, limit=20)) for _ in range(runs))

    async def served() -> float:
        args = ["-m", "bub_nb", "mcp", "serve", "--home", str(home)]
        async with Client(StdioServerParameters(command=sys.executable, args=args)) as client:
            await client.call_tool("search", {"query": query, "tape": tape.name, "limit": 20})
            times = []
            for _ in range(runs):
                started = time.perf_counter()
                await client.call_tool("search", {"query": query, "tape": tape.name, "limit": 20})
                times.append(time.perf_counter() - started)
            return statistics.median(times)

    over_mcp = asyncio.run(served())
    return [[f"search over MCP, {size:,} entries", ms(over_mcp), ms(inprocess), f"{over_mcp / inprocess:.2f}x", "-"]]


def _time(call: object) -> float:
    started = time.perf_counter()
    call()  # type: ignore[operator]
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1_000_000, help="entries in the searched tape")
    parser.add_argument("--calls", type=int, default=300, help="tool calls timed on each side")
    parser.add_argument("--runs", type=int, default=5, help="searches timed on each side")
    args = parser.parse_args()
    print(f"before: {load()}")
    table = call_rows(args.calls) + search_rows(args.size, args.runs)
    print(f"after: {load()}")
    print_table(["figure", "bub_nb", "baseline", "ratio", "target"], table)


if __name__ == "__main__":
    main()
