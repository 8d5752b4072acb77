"""``%handoff NAME --summarize`` as a user types it: on a real InteractiveShell and in a real Jupyter kernel."""

from __future__ import annotations

import json

from harness.kernel import Kernel
from harness.shell import Notebook

from bub_nb.tape.citations import find_citations
from bub_nb.testing import OpenAICompatibleServer


def cited(text: str) -> list[int]:
    return [entry_id for citation in find_citations(text) for entry_id in citation.ids]


def test_handoff_summarize_magic_writes_a_cited_summary(nb: Notebook) -> None:
    nb.run("%config BubMagics.model = 'offline'")
    nb.run("%%bub\nWe decided to clean the region column first.")
    nb.run("%handoff phase/2 --summarize owner=ana")
    state = nb.tape.find_anchor("phase/2").state
    assert state["owner"] == "ana" and state["summarized_by"] == "offline"
    assert "region column" in state["summary"] and cited(state["summary"])
    assert "summarized_by" in nb.shown()


def test_a_failing_summary_is_one_usage_error_and_writes_nothing(nb: Notebook) -> None:
    nb.run("%config BubMagics.model = 'offline'")
    nb.run("%%bub\nhello")
    nb.run("from bub_nb.agent.models import ScriptedModel\nfrom bub_nb.errors import ModelError")
    nb.run("failing = ScriptedModel([ModelError('the summary endpoint is down')])")
    nb.refused("%handoff phase/2 --summarize -m failing", "summary endpoint is down")
    nb.refused("%handoff phase/2 --summarize summarize=1", "cannot also be a state key")


def test_kernel_handoff_summarize_then_the_view_starts_at_the_cited_anchor(
    kernel: Kernel,
    openai_server: OpenAICompatibleServer,
) -> None:
    openai_server.reply("We will use weekly buckets.").reply("Plotted.")
    for prompt in ("How do we bucket the dates?", "Plot it."):
        reply, _ = kernel.run(f"%%bub\n{prompt}")
        assert reply["status"] == "ok", reply
    tape = kernel.tape
    start = tape.last_anchor().id  # type: ignore[union-attr]
    messages = [e.id for e in tape.read(start + 1) if e.kind == "message"]
    openai_server.reply(
        f"Summary:\nDates go in weekly buckets [#{messages[1]}], then a plot [#{messages[-1]}]. Also [#9999].\n"
        "Next steps:\nLabel the axes."
    )
    reply, _ = kernel.run("%handoff phase/2 --summarize")
    assert reply["status"] == "ok", reply

    reply, outputs = kernel.run("import bub_nb\nprint(bub_nb.open_tape().view().messages[0]['content'])")
    assert reply["status"] == "ok", reply
    first = "".join(o.get("text", "") for o in outputs if o["type"] == "stream")
    assert first.startswith("[Anchor created: phase/2]: ")
    state = json.loads(first.split("]: ", 1)[1])
    closed = range(start, tape.last_id + 1)
    assert cited(state["summary"]) and all(entry_id in closed for entry_id in cited(state["summary"]))
    assert state["removed_citations"] == 1 and "[#9999]" not in state["summary"]

    anchor_id = kernel.tape.find_anchor("phase/2").id
    openai_server.reply(f"Summary:\nThe weekly phase was closed [#{anchor_id}].")
    reply, _ = kernel.run(",handoff name=phase/3 summarize=true")  # the comma form, in the kernel's loop
    assert reply["status"] == "ok", reply
    closed = kernel.tape.find_anchor("phase/3").state
    assert closed is not None and closed["summary"] == f"The weekly phase was closed [#{anchor_id}]."


def test_kernel_failing_summary_is_one_usage_error_and_writes_nothing(
    kernel: Kernel,
    openai_server: OpenAICompatibleServer,
) -> None:
    openai_server.reply("Hello.")
    reply, _ = kernel.run("%%bub\nhi")
    assert reply["status"] == "ok", reply
    before = len(kernel.tape)
    openai_server.fail(400, "the model cannot summarize today")
    reply, outputs = kernel.run("%handoff phase/2 --summarize")
    assert reply["status"] == "error" and reply["ename"] == "UsageError", reply
    assert "cannot summarize today" in reply["evalue"] and "\n" not in reply["evalue"]
    assert not any("Traceback" in str(o) for o in outputs)
    assert len(kernel.tape) == before
    assert openai_server.pending == 0
