"""Tools run on a worker thread: an interrupt stops the turn at once and the abandoned call is recorded as such."""

from __future__ import annotations

import asyncio
import threading
import time

from bub_nb.agent import Agent, ScriptedModel
from bub_nb.agent.tools import tool
from bub_nb.tape import Tape


def test_aborting_during_a_slow_tool_returns_at_once_and_drops_its_late_result(tape: Tape) -> None:
    released = threading.Event()
    returned = threading.Event()

    def slow() -> str:
        """Wait until released."""
        released.wait(10)
        returned.set()
        return "late result"

    model = ScriptedModel([{"tool_calls": [{"name": "slow", "arguments": {}}]}, "never sent"])
    agent = Agent(tape, model, tools=[slow])

    async def scenario() -> float:
        turn = asyncio.create_task(agent.arun("call the slow tool"))
        while not any(e.kind == "message" for e in tape.read()):  # the turn has started
            await asyncio.sleep(0.01)
        started = time.perf_counter()
        await asyncio.sleep(0.2)  # the tool is running; a tool on the loop itself would hold this sleep
        agent.abort()
        await turn
        return time.perf_counter() - started

    waited = asyncio.run(scenario())
    assert waited < 1.5, f"the turn held the loop for {waited:.1f} s while its tool ran"
    released.set()
    assert returned.wait(5)
    time.sleep(0.1)
    entries = tape.read()
    kinds = [e.kind for e in entries if e.meta.get("run_id")]
    assert kinds == ["system", "message", "tool_call", "tool_result", "error", "error", "event"]
    assert not any("late result" in str(e.payload) for e in entries)
    assert [m["role"] for m in tape.view().messages][-2:] == ["assistant", "tool"]


def test_a_tool_sees_the_context_variables_of_the_turn_that_called_it() -> None:
    import contextvars

    cell: contextvars.ContextVar[str] = contextvars.ContextVar("cell", default="none")

    @tool
    def which_cell() -> str:
        """The cell this call belongs to."""
        return f"{cell.get()} on {threading.current_thread().name}"

    async def call() -> str:
        cell.set("In[7]")
        return str(await which_cell.run({}))

    assert asyncio.run(call()) == "In[7] on bub_nb-tool:which_cell"
