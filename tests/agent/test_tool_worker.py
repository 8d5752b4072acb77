"""Tools run on a worker thread: an interrupt stops the turn at once and the abandoned call is recorded as such."""

from __future__ import annotations

import asyncio
import threading

from bub_nb.agent import Agent, ScriptedModel
from bub_nb.agent.tools import tool
from bub_nb.tape import Tape


def test_aborting_during_a_slow_tool_returns_at_once_and_drops_its_late_result(tape: Tape) -> None:
    entered = threading.Event()
    released = threading.Event()
    returned = threading.Event()
    workers: list[threading.Thread] = []

    def slow() -> str:
        """Wait until released."""
        workers.append(threading.current_thread())
        entered.set()
        released.wait(60)  # bounds a turn that held its loop while the tool ran
        returned.set()
        return "late result"

    model = ScriptedModel([{"tool_calls": [{"name": "slow", "arguments": {}}]}, "never sent"])
    agent = Agent(tape, model, tools=[slow])

    async def scenario() -> None:
        turn = asyncio.create_task(agent.arun("call the slow tool"))
        while not entered.is_set():  # the tool is running
            await asyncio.sleep(0.01)
        agent.abort()
        await turn

    asyncio.run(scenario())
    # A tool run on the loop itself would have held the loop until it returned: the turn ended while it still waited.
    assert not returned.is_set(), "the turn held the loop while its tool ran"
    released.set()
    (worker,) = workers
    worker.join(60)  # the abandoned call has returned and handed on its result; its loop is gone
    assert returned.is_set() and not worker.is_alive()
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
