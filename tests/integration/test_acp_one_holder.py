"""A notebook in a real kernel and an ACP client on the same tape: the conversation has one holder.

While the notebook's own agent holds it, the client's turns and the kernel's go on one append-only tape. Once the
kernel hands the conversation to another agent, a prompt on the tape it left is refused in one line naming the
holder (JSON-RPC -32600) and writes nothing; on the holder's tape the client goes on, and the kernel sees those
turns as the holder's.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import acp
import pytest
from harness.acp_client import RecordingClient, acp_agent, text_prompt
from harness.kernel import kernel_environment, running_kernel

from bub_nb.agent.team import holder_on_tapes
from bub_nb.tape import Tape, open_tape

pytestmark = pytest.mark.integration


def _lines(tape: Tape) -> list[tuple[int, str, str | None]]:
    return [(e.id, e.kind, e.meta.get("source")) for e in tape.read()]


def test_a_prompt_on_a_tape_the_kernel_handed_away_is_refused_naming_the_holder(tmp_path: Path) -> None:
    home = tmp_path / "home"
    client = RecordingClient()
    with running_kernel(tmp_path, kernel_environment(home)) as kernel:
        kernel.ok("%%bub\nThe March sales were 120, 95 and 130.")
        main = kernel.tape
        rev_name = f"{main.name}~rev"

        async def scenario() -> tuple[Any, list[tuple[int, str, str | None]], list[tuple[int, str, str | None]]]:
            async with acp_agent(client, home) as (conn, _):
                await conn.load_session(cwd=str(tmp_path), session_id=main.name, mcp_servers=[])
                first = await conn.prompt(session_id=main.name, prompt=text_prompt("What is their mean?"))
                assert first.stop_reason == "end_turn"  # nobody was handed the conversation: main holds it

                await asyncio.to_thread(kernel.ok, "%agent rev\n%handoff h1 --to rev")
                before_main, before_rev = _lines(main), _lines(open_tape(rev_name, home=home, create=False))
                with pytest.raises(acp.RequestError) as refused:
                    await conn.prompt(session_id=main.name, prompt=text_prompt("And the median?"))
                after = (_lines(main), _lines(open_tape(rev_name, home=home, create=False)))
                assert after == (before_main, before_rev)  # the refusal wrote nothing, on either tape

                await conn.load_session(cwd=str(tmp_path), session_id=rev_name, mcp_servers=[])
                held = await conn.prompt(session_id=rev_name, prompt=text_prompt("Check the mean."))
                assert held.stop_reason == "end_turn"
                return refused.value, before_main, before_rev

        error, main_then, rev_then = asyncio.run(asyncio.wait_for(scenario(), 120))
        assert error.code == -32600
        message = error.data["message"]
        assert "\n" not in message and "'main' handed the conversation to 'rev'" in message
        assert f"session/load {rev_name!r}" in message and error.data["holder"] == "rev"

        kernel.refused("%%bub --agent main\nMay I go on?", "'main' handed the conversation to 'rev'")
        kernel.ok("%%bub\nIs the mean right?")  # the kernel runs as the holder, after the client's turn on its tape
        assert "`rev` holds the conversation" in kernel.ok("%agent")

    rev = open_tape(rev_name, home=home, create=False)
    assert holder_on_tapes(main) == "rev"
    assert _lines(main) == main_then  # nothing was written on the tape handed away, by the client or the kernel
    rev_lines = _lines(rev)
    assert [i for i, _, _ in rev_lines] == list(range(1, len(rev_lines) + 1))  # gap-free: nothing lost
    assert rev_lines[: len(rev_then)] == rev_then
    asked = [
        (e.meta.get("source"), e.payload["content"])
        for e in rev.read(len(rev_then) + 1)
        if e.kind == "message" and e.payload.get("role") == "user"
    ]
    assert asked == [("acp", "Check the mean."), (asked[1][0], "Is the mean right?")] and asked[1][0] != "acp"
    main_asked = [e.payload["content"] for e in main.read() if e.kind == "message" and e.payload.get("role") == "user"]
    assert main_asked == ["The March sales were 120, 95 and 130.", "What is their mean?"]
