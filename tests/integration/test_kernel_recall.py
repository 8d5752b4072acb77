"""Recall by the prompt in a real kernel, as a user types it: earlier turns, a retraction and a redaction, a turn
interrupted while it streams, then a turn whose request recalls what it should and nothing it must not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
from harness.kernel import Kernel

from bub_nb.testing import OpenAICompatibleServer

SECRET = "hunter2-Pixelcam-7731"
ADOPTED = "Our cat Pixel was adopted in May from the shelter on Elm Street."
PASTED = f"The camera that watches Pixel has the password {SECRET}, keep it for me."
WRONG = "Pixel was adopted from the shelter on Oak Avenue, not Elm Street."
STREAMED = "Pixel came home from the shelter in May and has been sleeping on the sofa ever since then."


def user_turn(kernel: Kernel, prompt: str) -> list[int]:
    """Run ``%%bub`` with ``prompt``; the ids of the user message and the answer it wrote."""
    kernel.ok(f"%%bub\n{prompt}")
    messages = [e for e in kernel.tape.read() if e.kind == "message"]
    return [messages[-2].id, messages[-1].id]


def raw_entries(path: Path) -> list[tuple[Any, ...]]:
    """The oracle: every line of the tape file, read by DuckDB's own JSON functions (no bub_nb code)."""
    sql = """
        WITH lines AS (SELECT unnest(string_split(content, chr(10))) AS line FROM read_text(?))
        SELECT CAST(line ->> '$.id' AS BIGINT) AS id, line ->> '$.kind' AS kind,
               line ->> '$.payload.role' AS role, line ->> '$.payload.content' AS content,
               coalesce(CAST(line ->> '$.meta.partial' AS BOOLEAN), false) AS partial
        FROM lines WHERE line <> '' ORDER BY id
    """
    return duckdb.execute(sql, [str(path)]).fetchall()


def test_a_recalled_turn_after_an_interrupt_brings_back_only_what_is_still_there(
    kernel: Kernel, openai_server: OpenAICompatibleServer
) -> None:
    kernel.ok('%config BubMagics.context = "last+recall"')
    openai_server.reply("Noted: Pixel was adopted in May.")
    adopted = user_turn(kernel, ADOPTED)
    openai_server.reply("I will keep the camera password.")
    user_turn(kernel, PASTED)
    openai_server.reply("Noted: Oak Avenue.")
    wrong = user_turn(kernel, WRONG)
    kernel.ok("%handoff phase/pets summary='We talked about the cat.'")
    shown = kernel.ok(f"%tape retract {wrong[0]}-{wrong[1]} --reason 'it was Elm Street after all'")
    assert "Retracted" in shown
    shown = kernel.ok(f"import bub_nb\nprint(bub_nb.redact_text({SECRET!r}).report())")
    path = kernel.tape.path
    assert path is not None and SECRET not in path.read_text()

    # ■ while the answer streams: a word has reached the cell, the rest has not.
    openai_server.reply(STREAMED, chunk_delay=0.5)
    sent = kernel.send("%%bub\nTell me about Pixel and the shelter")
    kernel.shown_in(sent, "Pixel")
    kernel.interrupt()
    (reply,) = kernel.replies([sent])
    assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt", reply
    partial = [e for e in kernel.tape.read() if e.kind == "message" and e.meta.get("partial")]
    assert len(partial) == 1 and STREAMED.startswith(partial[0].payload["content"].strip())
    assert 0 < len(partial[0].payload["content"]) < len(STREAMED)
    run = kernel.tape.read()[-1]
    assert run.kind == "event" and run.payload["data"]["status"] == "interrupted"

    openai_server.reply("Pixel was adopted in May, from the shelter on Elm Street.")
    kernel.ok("%%bub\nWhen was Pixel adopted, and from which shelter?")
    request = openai_server.last_request
    sent_text = json.dumps(request)
    recalled = [m["content"] for m in request["messages"] if str(m.get("content", "")).startswith("[Recalled #")]
    assert any(text.startswith(f"[Recalled #{adopted[0]} (score ") and ADOPTED in text for text in recalled), recalled
    assert SECRET not in sent_text and "[redacted sha256:" not in " ".join(recalled)
    assert WRONG not in sent_text and "Oak Avenue" not in sent_text  # retracted: neither recalled nor in the view
    assert partial[0].payload["content"] in sent_text  # the interrupted answer is part of the current phase
    assert request["messages"][-1] == {"role": "user", "content": "When was Pixel adopted, and from which shelter?"}

    # What the frame says was written is what DuckDB reads in the raw file.
    kernel.ok("frame = %tape df")
    columns = kernel.value(
        "[[int(r.id), r.kind] + ([r.role, r.content] if r.kind == 'message' else [None, None])"
        " for r in frame.itertuples()]"
    )
    raw = raw_entries(path)
    assert [row[0] for row in raw] == list(range(1, len(raw) + 1))  # ids gap-free: nothing lost
    said = [[i, kind, *((role, content) if kind == "message" else (None, None))] for i, kind, role, content, _ in raw]
    assert columns == said
    assert [row[3] for row in raw if row[4]] == [partial[0].payload["content"]]
