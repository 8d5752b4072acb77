"""The %bub line typed as people type it, in a real Jupyter kernel: a question mark, an option with a value.

The model is the local OpenAI-compatible endpoint, so what reaches it is read from the request itself.
"""

from __future__ import annotations

from harness.kernel import Kernel

from bub_nb.testing import OpenAICompatibleServer


def last_user_message(server: OpenAICompatibleServer) -> str:
    messages = server.requests[-1]["messages"]
    return str([m for m in messages if m["role"] == "user"][-1]["content"])


def test_a_question_typed_on_a_bub_line_reaches_the_model(
    kernel: Kernel, openai_server: OpenAICompatibleServer
) -> None:
    openai_server.reply("A tape is an append-only log.")
    assert "append-only log" in kernel.ok("%bub what is a tape?")
    assert last_user_message(openai_server) == "what is a tape?"
    openai_server.reply("Yes.")
    kernel.ok("%bub --no-stream is it really append-only??")
    assert last_user_message(openai_server) == "is it really append-only??"
    assert len(openai_server.requests) == 2

    reply, _ = kernel.run("%bub?")  # alone: IPython's help, in the pager, and no turn
    pages = [item["data"]["text/plain"] for item in reply.get("payload", []) if item.get("source") == "page"]
    assert pages and "Run one agent turn" in pages[0], reply
    assert len(openai_server.requests) == 2


def test_bub_takes_budget_on_its_line_and_zero_switches_it_off(
    kernel: Kernel, openai_server: OpenAICompatibleServer
) -> None:
    openai_server.reply("hello back")
    assert "hello back" in kernel.ok("%bub --budget 5000 hello")
    assert last_user_message(openai_server) == "hello"
    kernel.ok("%config BubMagics.budget = 20")
    kernel.refused("%bub what now?", "over the budget of 20")
    openai_server.reply("no budget this time")
    assert "no budget this time" in kernel.ok("%bub --budget 0 what now?")


def test_a_refused_config_value_leaves_later_failures_one_line(offline_kernel: Kernel) -> None:
    status, shown = offline_kernel.outcome("%config BubMagics.budget = -1")
    assert status == "ok" and "BubMagics.budget must be 0 (no budget) or a number of tokens, got -1" in shown
    offline_kernel.ok("%%bub\nhello")
    status, shown = offline_kernel.outcome("%%bub --budget 20\nwhat now?")
    assert status == "error" and "over the budget of 20" in shown
    assert "Turn failed" not in shown and "ERROR:" not in shown, shown
