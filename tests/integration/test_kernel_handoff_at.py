"""``%config BubMagics.handoff_at`` in a real kernel, as a user types it: the endpoint's refusal teaches the window,
a later turn hands off first, ■ lands while that handoff's summary is asked for, then the cell is run again and
the notebook is run all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
from harness.kernel import Kernel, shown_text, wait_for_requests

from bub_nb.testing import OpenAICompatibleServer

HANDOFF_AT = "auto_handoff/handoff_at"
EARLY = f"A summarizing handoff ({HANDOFF_AT}) was written before this turn"
STOPPED = f"The summarizing handoff ({HANDOFF_AT}) before this turn was interrupted"
STREAMED = "Weekly means are smoother than the hourly ones, and the warmest week was the third one of May."
BACKGROUND = "Background: the greenhouse sensors log temperature every minute to sensors.csv. " * 6


def last_user_id(kernel: Kernel) -> int:
    return max(e.id for e in kernel.tape.read() if e.kind == "message" and e.payload.get("role") == "user")


def summary_of(kernel: Kernel) -> str:
    """A summary the model could write of the current phase, citing its newest prompt for what that prompt says (a
    citation stays only where the entry holds the claim)."""
    last = kernel.tape.get(last_user_id(kernel))
    said = str(last.payload["content"]).split(". ")[0].rstrip(".?")
    return f"Summary:\nThe user said: {said} [#{last.id}].\n\nNext steps:\nGo on."


def citing_what_comes(kernel: Kernel, ahead: int = 30) -> str:
    """A summary for a handoff that runs later in a queue, whose phase's ids are not known yet: it cites each of the
    next ids, and the handoff keeps those that fall inside its phase (the others are removed, as for any model)."""
    last = kernel.tape.last_id
    cited = "".join(f"[#{i}]" for i in range(last - 8, last + ahead))
    return f"Summary:\nPlot the temperature per hour, per day and per week {cited}.\n\nNext steps:\nGo on."


def shown_by(kernel: Kernel, msg_id: str) -> str:
    """What the queued cell ``msg_id`` showed, read from the kernel's broadcasts until it went idle."""
    outputs: list[dict[str, Any]] = []
    while True:
        message = kernel.client.get_iopub_msg(timeout=30)
        if message["parent_header"].get("msg_id") != msg_id:
            continue
        if message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
            return shown_text(outputs)
        if message["msg_type"] in ("display_data", "update_display_data", "stream", "execute_result", "error"):
            outputs.append({"type": message["msg_type"], **message["content"]})


def raw_lines(path: Path) -> list[tuple[Any, ...]]:
    """The oracle: each line of the tape file as DuckDB's JSON functions read it (no bub_nb code)."""
    sql = """
        WITH lines AS (SELECT unnest(string_split(content, chr(10))) AS line FROM read_text(?))
        SELECT CAST(line ->> '$.id' AS BIGINT), line ->> '$.kind',
               coalesce(line ->> '$.payload.name', line ->> '$.payload.role'),
               line ->> '$.payload.state.summary', line ->> '$.payload.data.status', line ->> '$.payload.content'
        FROM lines WHERE line <> '' ORDER BY 1
    """
    return duckdb.execute(sql, [str(path)]).fetchall()


def test_an_interrupted_early_handoff_writes_no_anchor_and_the_next_run_hands_off(
    kernel: Kernel, openai_server: OpenAICompatibleServer
) -> None:
    kernel.ok("%config BubMagics.handoff_at = 0.05")
    openai_server.reply("Noted.")
    kernel.ok(f"%%bub\n{BACKGROUND}")
    # The endpoint refuses the next prompt and names its window: the overflow retry, the last resort, runs once.
    openai_server.fail_context_length(limit=8192).reply(summary_of(kernel)).reply("Noted again.")
    shown = kernel.ok("%%bub\nWhich file do the sensors write?")
    assert "auto_handoff/context_overflow" in shown and EARLY not in shown

    # Now the window is known: the next turn hands off first, and ■ lands while the summary is asked for.
    path = kernel.tape.path
    assert path is not None
    before = [entry.to_dict() for entry in kernel.tape.read()]
    asked = len(openai_server.requests)
    openai_server.reply(summary_of(kernel), delay=30)
    cell = "%%bub\nPlot the temperature per hour."
    sent = kernel.send(cell)
    wait_for_requests(openai_server, asked + 1)
    assert "Summarize the phase" in openai_server.requests[-1]["messages"][0]["content"]
    kernel.interrupt()
    (reply,) = kernel.replies([sent])
    assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt", reply
    shown = shown_by(kernel, sent)
    assert "Interrupted before any answer arrived; the prompt is kept on the tape." in shown
    assert f"{STOPPED}: nothing of it was written" in shown
    after = kernel.tape.read()
    assert [entry.to_dict() for entry in after[: len(before)]] == before  # nothing rewritten
    stopped = after[len(before) :]
    assert [e.kind for e in stopped] == ["system", "message", "error", "error", "event"]  # no anchor, no summary
    assert stopped[1].payload == {"role": "user", "content": "Plot the temperature per hour."}
    assert [e.payload["kind"] for e in stopped[2:4]] == ["handoff.interrupted", "interrupted"]
    assert stopped[-1].payload["data"]["status"] == "interrupted"
    assert len(openai_server.requests) == asked + 1  # the prompt never reached the model

    # The same cell, run again: the handoff is tried again and written, and the turn runs.
    openai_server.reply(summary_of(kernel)).reply("Here is the hourly plot.")
    shown = kernel.ok(cell)
    assert EARLY in shown and "Here is the hourly plot." in shown
    assert kernel.tape.anchor_names().count(HANDOFF_AT) == 1
    assert openai_server.last_request["messages"][-1] == {"role": "user", "content": "Plot the temperature per hour."}

    # Run All, and ■ while the first turn's handoff is summarized: Jupyter cancels the cells queued after it.
    cells = ["%config BubMagics.handoff_at = 0.05", cell, "%%bub\nAnd per day?"]
    asked, written = len(openai_server.requests), kernel.tape.last_id
    openai_server.reply(summary_of(kernel), delay=30)
    sent_all = kernel.queue(cells)
    wait_for_requests(openai_server, asked + 1)
    kernel.interrupt()
    replies = kernel.replies(sent_all, timeout=60)
    assert [r["status"] for r in replies] == ["ok", "error", "aborted"], replies
    assert STOPPED in shown_by(kernel, sent_all[1])
    assert [e.kind for e in kernel.tape.read(written + 1)] == ["system", "message", "error", "error", "event"]
    assert kernel.tape.anchor_names().count(HANDOFF_AT) == 1 and len(openai_server.requests) == asked + 1

    # Run All again: every turn of the notebook hands off first (the share is that low), each cell says so.
    for answer in ("Hourly again.", "Daily now."):
        openai_server.reply(citing_what_comes(kernel)).reply(answer)
    sent_all = kernel.queue(cells)
    replies = kernel.replies(sent_all, timeout=60)
    assert [r["status"] for r in replies] == ["ok", "ok", "ok"], replies
    said = [shown_by(kernel, msg_id) for msg_id in sent_all[1:]]
    assert all(EARLY in text for text in said) and "Daily now." in said[1], said
    assert kernel.tape.anchor_names().count(HANDOFF_AT) == 3
    assert openai_server.pending == 0

    # ■ once the handoff is written, while the answer streams: the cell says both what was kept and the handoff.
    openai_server.reply(citing_what_comes(kernel)).reply(STREAMED, chunk_delay=0.5)
    sent = kernel.send("%%bub\nAnd per week?")
    kernel.shown_in(sent, "Weekly")
    kernel.interrupt()
    (reply,) = kernel.replies([sent])
    assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt", reply
    shown = shown_by(kernel, sent)
    assert "Interrupted: the partial answer is kept on the tape." in shown and EARLY in shown, shown
    assert kernel.tape.anchor_names().count(HANDOFF_AT) == 4

    # The raw file, read by DuckDB: ids gap-free, every early handoff whole (its summary event, the anchor with its
    # summary, its handoff event, in one run of lines), and the interrupted turn's prompt there once.
    raw = raw_lines(path)
    assert [row[0] for row in raw] == list(range(1, len(raw) + 1))
    at = [i for i, row in enumerate(raw) if row[1] == "anchor" and row[2] == HANDOFF_AT]
    assert len(at) == 4
    for i in at:
        assert raw[i - 1][1:3] == ("event", "summary") and raw[i + 1][1:3] == ("event", "handoff"), raw[i - 1 : i + 2]
        assert raw[i][3] and "[#" in raw[i][3]
    summaries = [i for i, row in enumerate(raw) if row[1:3] == ("event", "summary")]
    assert all(raw[i + 1][1] == "anchor" for i in summaries)  # no summary without the anchor it was written for
    asked_for = [row for row in raw if row[1:3] == ("message", "user") and row[5] == "Plot the temperature per hour."]
    assert len(asked_for) == 4  # interrupted, run again, Run All stopped, Run All again: each prompt kept once
    statuses = [row[4] for row in raw if row[1] == "event" and row[2] == "run"]
    # the first two turns, the interrupted one and its rerun, Run All stopped, Run All again, the streamed one
    assert statuses == ["ok", "ok", "interrupted", "ok", "interrupted", "ok", "ok", "interrupted"]
