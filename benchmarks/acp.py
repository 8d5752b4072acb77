"""What ACP costs: a turn driven by the ACP SDK's client through ``bub-nb acp serve`` over stdio, against the same
turn through ``Agent.run`` in process; the first chunk's latency beside each.

    python benchmarks/acp.py --turns 40

Each side's agent is offered the same tools (the kernel tools an ACP session offers), so each sends the same request.
Both sides talk to the same local OpenAI-compatible server (``bub_nb.testing``), which streams the same reply word
by word, and write to a file tape; the server is started once and a session opened before timing, so what is timed
is the turn: the prompt crossing the pipe, the turn, every chunk and the usage update coming back. The figure is
the median of alternating turns, so a busy machine slows both sides alike.

Beside them, the same turn through ``Agent.run`` in a child process that a line on a pipe starts and that answers
with a line at its first delta and at its end: what the process boundary alone costs, with no protocol.
"""

# ruff: noqa: E402  (the SDK is imported after this script's folder leaves sys.path: see below)
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import load, ms, print_table

# This script is named for what it measures, which is also the SDK's name: its own folder must not shadow the SDK.
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != Path(__file__).resolve().parent]

import acp
from acp import schema

import bub_nb
from bub_nb.agent import Agent, OpenAIModel
from bub_nb.agent.kernel_tools import NamespaceKernel, kernel_tools
from bub_nb.tape import open_tape
from bub_nb.testing import OpenAICompatibleServer

TARGET_RATIO = 1.2
PACKAGE_ROOT = str(Path(bub_nb.__file__).resolve().parents[1])
REPLY = "The kettle boiled at seven and the tea steeped for four minutes before anyone noticed it"


CHILD = """
import asyncio, os, sys
from bub_nb.agent import Agent, OpenAIModel
from bub_nb.agent.kernel_tools import NamespaceKernel, kernel_tools
from bub_nb.tape import open_tape

async def main():
    model = OpenAIModel("bench", base_url=os.environ["BUB_API_BASE"], api_key="test")
    tools = kernel_tools(NamespaceKernel({}))
    agent = Agent(open_tape("child-process", home=os.environ["BUB_HOME"]), model, tools=tools)
    for _ in sys.stdin:
        deltas = []
        def on_delta(delta):
            if not deltas:
                print("first", flush=True)
            deltas.append(delta)
        await agent.arun("When did the kettle boil?", on_delta=on_delta)
        print("done", flush=True)

asyncio.run(main())
"""


class Listener:
    """The client side: notes when the first chunk of a turn arrives."""

    def __init__(self) -> None:
        self.first: float | None = None

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if self.first is None and update.session_update == "agent_message_chunk":
            self.first = time.perf_counter()

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        return schema.RequestPermissionResponse(outcome=schema.DeniedOutcome(outcome="cancelled"))

    def on_connect(self, conn: Any) -> None:
        return None


async def measure(turns: int) -> dict[str, list[float]]:
    home = Path(tempfile.mkdtemp(prefix="bub-nb-acp-bench-"))
    times: dict[str, list[float]] = {
        key: [] for key in ("acp", "acp_first", "agent", "agent_first", "child", "child_first")
    }
    with OpenAICompatibleServer() as server:
        server.default_text = REPLY
        env = {"BUB_HOME": str(home), "BUB_API_BASE": server.base_url, "BUB_API_KEY": "test", "HOME": str(home)}
        env["PYTHONPATH"] = PACKAGE_ROOT  # the server runs the bub_nb measured in process, not an installed copy
        command = str(Path(sys.executable).with_name("bub-nb"))
        listener = Listener()
        model = OpenAIModel("bench", base_url=server.base_url, api_key="test")
        # the tools an ACP session's agent is offered (bub_nb/agent/acp/server.py), so each side sends one request
        agent = Agent(open_tape("in-process", home=home), model, tools=kernel_tools(NamespaceKernel({})))
        args = ("acp", "serve", "--home", str(home), "--model", "openai:bench")
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-c", CHILD, env={**env, "PATH": os.environ.get("PATH", "")},
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert child.stdin is not None and child.stdout is not None
        async with acp.spawn_agent_process(listener, command, *args, env=env) as (conn, _):
            await conn.initialize(
                protocol_version=acp.PROTOCOL_VERSION, client_capabilities=schema.ClientCapabilities()
            )
            session = (await conn.new_session(cwd=str(home))).session_id
            prompt = [schema.TextContentBlock(type="text", text="When did the kettle boil?")]
            for turn in range(turns + 3):  # three turns of each warm both sides up
                listener.first = None
                started = time.perf_counter()
                await conn.prompt(session_id=session, prompt=prompt)
                ended = time.perf_counter()
                first: list[float] = []

                def on_delta(delta: str, first: list[float] = first) -> None:
                    if not first:
                        first.append(time.perf_counter())

                began = time.perf_counter()
                await agent.arun("When did the kettle boil?", on_delta=on_delta)
                finished = time.perf_counter()
                asked = time.perf_counter()
                child.stdin.write(b"go\n")
                await child.stdin.drain()
                await child.stdout.readline()
                child_first = time.perf_counter()
                await child.stdout.readline()
                child_done = time.perf_counter()
                if turn >= 3:
                    times["acp"].append(ended - started)
                    times["acp_first"].append((listener.first or ended) - started)
                    times["agent"].append(finished - began)
                    times["agent_first"].append(first[0] - began)
                    times["child"].append(child_done - asked)
                    times["child_first"].append(child_first - asked)
        child.stdin.close()
        await child.wait()
    return times


def rows(turns: int) -> list[list[str]]:
    times = asyncio.run(measure(turns))
    median = {key: statistics.median(values) for key, values in times.items()}
    ratio = median["acp"] / median["agent"]
    first_ratio = median["acp_first"] / median["agent_first"]
    child_ratio = median["child"] / median["agent"]
    child_first_ratio = median["child_first"] / median["agent_first"]
    return [
        ["one turn over ACP (median)", ms(median["acp"]), ms(median["agent"]), f"{ratio:.2f}x", f"<= {TARGET_RATIO}x"],
        [
            "first chunk over ACP (median)",
            ms(median["acp_first"]),
            ms(median["agent_first"]),
            f"{first_ratio:.2f}x",
            "-",
        ],
        ["one turn in a child process (median)", ms(median["child"]), ms(median["agent"]), f"{child_ratio:.2f}x", "-"],
        [
            "first delta in a child process (median)",
            ms(median["child_first"]),
            ms(median["agent_first"]),
            f"{child_first_ratio:.2f}x",
            "-",
        ],
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=40, help="turns timed on each side")
    args = parser.parse_args()
    print(f"before: {load()}")
    table = rows(args.turns)
    print(f"after: {load()}")
    print_table(["figure", "measured", "Agent.run in process", "ratio", "target"], table)


if __name__ == "__main__":
    main()
