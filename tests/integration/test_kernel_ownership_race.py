"""Two kernels on one notebook hand the conversation on at the same moment: one handoff wins, the other is
refused against the holder the first one made, and nothing of it is written."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from harness.kernel import Kernel, kernel_environment, running_kernel

from bub_nb.agent.team import CONTEXT_HANDOFF, holder_on_tapes
from bub_nb.tape import Tape, open_tape
from bub_nb.testing import OpenAICompatibleServer


@pytest.fixture
def two_kernels(tmp_path: Path, openai_server: OpenAICompatibleServer) -> Iterator[tuple[Kernel, Kernel]]:
    endpoint = {
        "BUB_MODEL": "openai:test-model",
        "BUB_API_BASE": openai_server.base_url,
        "BUB_API_KEY": "test-key-not-secret",
    }
    env = kernel_environment(tmp_path / "home", **endpoint)  # the same folder: the same notebook, the same tapes
    with running_kernel(tmp_path, env) as first, running_kernel(tmp_path, env) as second:
        yield first, second


def _handoff_anchors(tape: Tape) -> list[str]:
    return [
        entry.payload["name"]
        for entry in tape.read()
        if entry.kind == "anchor" and CONTEXT_HANDOFF in (entry.payload.get("state") or {})
    ]


def test_two_kernels_handing_the_conversation_on_at_once_cannot_both_succeed(
    two_kernels: tuple[Kernel, Kernel], openai_server: OpenAICompatibleServer
) -> None:
    first, second = two_kernels
    first.ok("%agent rev\n%agent other")
    first.ok("%%bub\nThe March sales were 120, 95 and 130.")
    main = first.tape
    asked = next(entry.id for entry in main.read() if entry.payload.get("role") == "user")
    # Both summaries are answered only once both requests are in: each kernel has read the holder (nobody: main
    # sends) before either writes. Without the notebook's lock both would then write and both succeed.
    openai_server.together([f"The March sales were 120, 95 and 130 [#{asked}]."] * 2)
    sent = [
        (first, first.send("%handoff race_k1 --to rev --summarize")),
        (second, second.send("%handoff race_k2 --to other --summarize")),
    ]
    replies = [kernel.replies([msg_id], timeout=120)[0] for kernel, msg_id in sent]

    statuses = sorted(reply["status"] for reply in replies)
    assert statuses == ["error", "ok"], replies
    (refused,) = [reply for reply in replies if reply["status"] == "error"]
    assert refused["ename"] == "UsageError" and "handed the conversation to" in refused["evalue"], refused
    winner = "rev" if replies[0]["status"] == "ok" else "other"
    loser = "other" if winner == "rev" else "rev"

    assert len(_handoff_anchors(main)) == 1  # the refused handoff wrote nothing on the sender's tape
    loser_tape = open_tape(Path(str(main.path).replace(".jsonl", f"~{loser}.jsonl")))
    assert not loser_tape.store.exists(loser_tape.name) or not _handoff_anchors(loser_tape)
    assert holder_on_tapes(main) == winner
    for kernel in (first, second):  # both kernels see the one holder
        assert f"`{winner}` holds the conversation" in kernel.ok("%agent")
        kernel.refused("%%bub --agent main\nMay I go on?", f"'main' handed the conversation to '{winner}'")
