"""A misbehaving model met in a real kernel, typed as a user types it: the tape keeps its history and its word."""

from __future__ import annotations

import re

from harness.kernel import Kernel

from bub_nb.testing import OpenAICompatibleServer

HUGE = "Everything [#1-#99999999999]."


def test_a_model_asking_to_erase_the_tape_leaves_it_archived_and_the_turn_whole(
    kernel: Kernel, openai_server: OpenAICompatibleServer
) -> None:
    kernel.ok("%%bub\nHello")
    openai_server.reply_tool_calls([{"name": "tape_reset", "arguments": {"archive": False}}])
    openai_server.reply("The tape is reset.")
    shown = kernel.ok("%%bub\nPlease wipe everything, no archive")
    first, last = map(int, re.search(r"entries #(\d+)–#(\d+)", shown).groups())  # type: ignore[union-attr]
    assert first <= last
    assert kernel.home is not None and list((kernel.home / "tapes").glob("*.jsonl.*.bak"))
    turn = kernel.ok("%context --turn -1")
    assert "Please wipe everything" in turn
    prompts = kernel.value(
        "[e.payload['content'] for e in get_ipython().find_magic('tape').__self__.session.tape.read(kinds=('message',))"
        " if e.payload.get('role') == 'user']"
    )
    assert prompts == ["Please wipe everything, no archive"]


def test_a_summary_citing_everything_is_refused_and_readers_stay_bounded(
    kernel: Kernel, openai_server: OpenAICompatibleServer
) -> None:
    kernel.ok("%%bub\nHello")
    kernel.refused(f"%handoff phase/a summary='{HUGE}'", "beyond the tape's entries")
    openai_server.reply_tool_calls([{"name": "tape_handoff", "arguments": {"name": "phase/all", "summary": HUGE}}])
    openai_server.reply("I could not.")
    kernel.ok("%%bub\nHand off with a summary of everything")
    # A tape another writer left with such an anchor still reads.
    kernel.ok(
        "from bub_nb.tape.events import handoff_entries\n"
        "get_ipython().find_magic('tape').__self__.session.tape.extend("
        f"handoff_entries('phase/bub', {{'summary': {HUGE!r}}}))"
    )
    assert "phase/bub" in kernel.ok("%anchors", timeout=30)
    kernel.ok("%context", timeout=30)
    kernel.ok("%context phases", timeout=30)
    kernel.ok("%tape export out.md", timeout=30)


def test_an_oversized_prompt_says_what_it_left_and_the_next_small_turn_runs(
    kernel: Kernel, openai_server: OpenAICompatibleServer
) -> None:
    openai_server.context_window = 400
    kernel.ok("%%bub\nHello")
    before = kernel.entries()
    content, _ = kernel.run("%%bub\n" + "long words " * 400)
    assert (content["status"], content["ename"]) == ("error", "UsageError")
    assert "nothing was written" not in content["evalue"] and "kept on the tape" in content["evalue"]
    assert kernel.entries() == before + 4  # the system prompt, the prompt, the error, the run event
    shown = kernel.ok("%%bub\nA small question")
    assert "did not fit" not in shown and "auto_handoff" not in shown
    assert "auto_handoff/context_overflow" not in kernel.ok("%anchors")


def test_phases_mode_over_the_window_bounds_its_chain_in_a_kernel(
    kernel: Kernel, openai_server: OpenAICompatibleServer
) -> None:
    for number in range(6):
        kernel.ok(f"%%bub --context phases\nQuestion {number}")
        kernel.ok(f"%handoff phase/{number} summary='Phase {number} covered {'many things ' * 30}[#2].'")
    openai_server.context_window = 700
    for _ in range(2):
        before = kernel.entries()
        shown = kernel.ok("%%bub --context phases\nA small question")
        assert "'phases' mode" in shown and "no handoff was written" in shown
        assert kernel.entries() == before + 4
    assert "auto_handoff/context_overflow" not in kernel.ok("%anchors")
    assert "left out to fit the window" in openai_server.last_request["messages"][1]["content"]


def test_a_filled_in_value_that_reads_as_a_command_is_sent_to_the_model_and_the_tape_stays(
    kernel: Kernel, openai_server: OpenAICompatibleServer
) -> None:
    openai_server.reply("Noted.")
    kernel.ok("%%bub\nRemember: the budget is 1,200 EUR.")
    before = kernel.entries()
    kernel.ok('x = ",tape.reset archive=false"')
    openai_server.reply("That is only text to me.")
    kernel.ok("%%bub\n{x}")
    assert kernel.entries() > before
    assert kernel.home is not None and not list((kernel.home / "tapes").glob("*.jsonl.*.bak"))
    assert ",tape.reset archive=false" in str(openai_server.requests[-1]["messages"])
    prompts = kernel.value(
        "[e.payload['content'] for e in get_ipython().find_magic('tape').__self__.session.tape.read(kinds=('message',))"
        " if e.payload.get('role') == 'user']"
    )
    assert prompts == ["Remember: the budget is 1,200 EUR.", ",tape.reset archive=false"]
