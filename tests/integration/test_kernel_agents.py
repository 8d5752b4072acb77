"""Two agents in a real kernel against the local endpoint: a transfer, the receiver's first request, the sender's
refusal, and a handback."""

from __future__ import annotations

import json

from harness.kernel import Kernel

from bub_nb.tape import open_tape

ANCHOR = "[Anchor created: review/1]: "


def test_a_transfer_hands_the_receiver_a_request_that_starts_at_the_handoff_and_cites_the_sender(
    kernel: Kernel, openai_server: object
) -> None:
    server = openai_server
    kernel.ok("%agent analyst\n%agent reviewer")
    kernel.ok("%%bub --agent analyst\nThe March sales were 120, 95 and 130. What is their mean?")
    kernel.ok(
        "%handoff review/1 --from analyst --to reviewer --reason 'check the mean' "
        "summary='The user asked for a mean [#6]; the analyst answered [#7].'"
    )
    asked = len(server.requests)  # type: ignore[attr-defined]
    kernel.ok("%%bub\nIs the analyst's mean right?")  # runs as the holder, the reviewer

    first = server.requests[asked]  # type: ignore[attr-defined]
    roles = [message["role"] for message in first["messages"]]
    assert roles == ["system", "assistant", "user"]
    anchor = first["messages"][1]["content"]
    assert anchor.startswith(ANCHOR)
    record = json.loads(anchor[len(ANCHOR) :])["context_handoff"]
    assert (record["from"], record["to"]) == ("agent:analyst", "agent:reviewer")
    assert record["content"]["ownership"] == "transfer"
    refs = record["content"]["refs"]
    assert len(refs) == 2 and all(ref.startswith("tape://") and "~analyst/entry/" in ref for ref in refs)
    kernel.ok("import bub_nb")
    cited = kernel.value(f"[bub_nb.resolve(ref).payload for ref in {refs!r}]")
    assert cited[0] == {"role": "user", "content": "The March sales were 120, 95 and 130. What is their mean?"}
    assert cited[1]["role"] == "assistant"
    # Nothing of the analyst's tape was copied into the reviewer's request: only the anchor, then the question.
    assert first["messages"][2]["content"] == "Is the analyst's mean right?"

    analyst = open_tape(next((kernel.home / "tapes").glob("*~analyst.jsonl")))
    before = len(analyst)
    requests = len(server.requests)  # type: ignore[attr-defined]
    kernel.refused("%%bub --agent analyst\nCan I go on?", "'analyst' handed the conversation to 'reviewer'")
    assert len(analyst) == before and len(server.requests) == requests  # type: ignore[attr-defined]

    kernel.ok("%handoff review/done --to analyst summary='Checked: the mean is right.'")
    kernel.ok("%%bub\nThanks!")
    back = server.requests[-1]  # type: ignore[attr-defined]
    assert back["messages"][1]["content"].startswith("[Anchor created: review/done]: ")
    assert "agent:reviewer" in back["messages"][1]["content"]
    assert len(analyst) > before
    listing = kernel.ok("%agent")
    assert "| analyst |" in listing and "✋ holds" in listing.split("| analyst |")[1].split("\n")[0]
