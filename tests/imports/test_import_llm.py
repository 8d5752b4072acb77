"""llm's logs.db, written by llm's own code, becomes a tape: its threads, messages, tools and turns."""

from __future__ import annotations

import base64
import json
import shutil
import sqlite3
from contextlib import closing
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from harness.logs import DATA

from bub_nb import import_log, open_tape
from bub_nb.testing import OpenAICompatibleServer


def test_a_logs_db_maps_threads_messages_and_turns_and_keeps_the_rest(llm_logs: Path, home: Path) -> None:
    report = import_log(llm_logs, home=home)

    assert report.format == "llm"
    # 1 thread, 7 messages, 3 turns, 1 tool definition; the 3 rows tying turns to tools are kept whole.
    assert (report.records, report.mapped, report.kept) == (15, 12, 3)
    assert report.kept_types == {"turn_tools": 3}
    tape = open_tape(report.tape, home=home)
    [anchor] = tape.anchors()
    assert anchor.name == "conversation" and anchor.state is not None and anchor.state["name"] == "What is 2 + 3?"
    call = tape.read(kinds=["tool_call"])[0].payload["calls"][0]
    assert call["function"] == {"name": "add", "arguments": '{"a":2,"b":3}'}
    assert tape.read(kinds=["tool_result"])[0].payload["results"] == ["5"]
    assert tape.read(kinds=["system"])[0].payload["content"] == "Answer briefly."
    contents = [m["content"] for m in tape.view().messages if m["role"] != "tool"]
    assert contents[-3:] == ["2 + 3 is 5.", "Say hello", "Hello again."]


def test_each_turn_closes_with_a_run_event_holding_its_usage_model_and_duration(llm_logs: Path, home: Path) -> None:
    report = import_log(llm_logs, home=home)
    frame = open_tape(report.tape, home=home).to_frame()

    runs = frame[frame["name"] == "run"]
    assert runs["prompt_tokens"].tolist() == [50, 70, 90]
    assert runs["completion_tokens"].tolist() == [7, 6, 3]
    data = [payload["data"] for payload in runs["payload"]]
    assert {d["model"] for d in data} == {"bub-nb-test"}
    assert all(isinstance(d["elapsed_ms"], int) for d in data)
    assert runs["run_id"].notna().all()


def test_a_logs_db_from_before_threads_reads_its_responses_and_tool_rows(home: Path) -> None:
    """llm before 0.30 logged one ``responses`` row per call, with ``tool_calls`` and ``tool_results`` rows."""
    report = import_log(DATA / "llm" / "logs-0.29.db", home=home)

    # 1 conversation, 3 responses, 1 call, 1 result, 1 tool; the 3 rows tying responses to tools are kept.
    assert (report.format, report.records, report.mapped, report.kept) == ("llm", 10, 7, 3)
    assert report.kept_types == {"tool_responses": 3}
    tape = open_tape(report.tape, home=home)
    assert [(m["role"], m["content"]) for m in tape.view().messages][1:] == [
        ("user", "What is 2 + 3?"),
        ("assistant", ""),
        ("tool", "5"),
        ("assistant", "2 + 3 is 5."),
        ("user", "Say hello"),
        ("assistant", "Hello again."),
    ]
    runs = tape.to_frame().query("name == 'run'")
    assert runs["prompt_tokens"].tolist() == [50, 70, 90]
    assert runs.iloc[0]["date"].isoformat() == "2026-11-26T10:14:53.394133+00:00"


def test_cached_and_reasoning_tokens_come_from_where_llm_keeps_them(llm_logs: Path, home: Path) -> None:
    """llm keeps what OpenAI's usage says beyond its two counts in ``token_details``, nested as OpenAI nests it."""
    with closing(sqlite3.connect(llm_logs)) as db:
        details = [json.loads(text) for (text,) in db.execute("SELECT token_details FROM turns ORDER BY id") if text]
    cached = [d["prompt_tokens_details"]["cached_tokens"] for d in details]
    reasoning = [d.get("completion_tokens_details", {}).get("reasoning_tokens", 0) for d in details]

    runs = open_tape(import_log(llm_logs, home=home).tape, home=home).to_frame().tape.runs()

    assert runs["cached_tokens"].dropna().tolist() == cached == [36, 64]
    assert runs["reasoning_tokens"].dropna().tolist() == [r for r in reasoning if r] == [2]


PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
"""A one-pixel PNG."""


def log_prompts(path: Path, server: OpenAICompatibleServer, prompts: list[tuple[str, list[Any]]]) -> None:
    """Each prompt, with its attachments, sent by llm's OpenAI plugin and logged by llm itself."""
    llm = pytest.importorskip("llm")
    sqlite_utils = pytest.importorskip("sqlite_utils")
    from llm.default_plugins.openai_models import Chat

    db = sqlite_utils.Database(path)
    model = Chat("bub-nb-test", key="sk-test", api_base=server.base_url, vision=True)
    for text, attachments in prompts:
        server.reply(f"Seen: {text}", usage={"prompt_tokens": 300, "completion_tokens": 4})
        response = model.prompt(text, attachments=[llm.Attachment(**given) for given in attachments])
        response.text()
        response.log_to_db(db)
    db.close()


def test_an_image_attachment_is_an_image_part_and_a_record(
    tmp_path: Path, openai_server: OpenAICompatibleServer, home: Path
) -> None:
    path = tmp_path / "logs.db"
    log_prompts(
        path,
        openai_server,
        [
            ("Describe this image", [{"content": PIXEL, "type": "image/png"}]),
            ("And this one", [{"url": "https://example.com/cat.jpg", "type": "image/jpeg"}]),
        ],
    )
    sent = [m["content"] for request in openai_server.requests for m in request["messages"] if m["role"] == "user"]
    with closing(sqlite3.connect(path)) as db:
        stored = db.execute("SELECT count(*) FROM attachments").fetchone()[0]

    report = import_log(path, home=home)
    users = [m["content"] for m in open_tape(report.tape, home=home).view(None).messages if m["role"] == "user"]

    assert stored == 2 and report.accounted and report.kept_types.get("attachment", 0) == 0
    assert users == sent  # what llm sent the endpoint, image parts and all
    image = users[0][1]["image_url"]["url"]
    assert base64.b64decode(image.split(",", 1)[1]) == PIXEL and image.startswith("data:image/png;base64,")
    assert users[1][1] == {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}}


def test_a_database_from_before_threads_upgraded_and_used_by_today_s_llm_reads_in_date_order(
    tmp_path: Path, openai_server: OpenAICompatibleServer, home: Path
) -> None:
    migrations = pytest.importorskip("llm.migrations")
    sqlite_utils = pytest.importorskip("sqlite_utils")
    path = tmp_path / "logs.db"
    shutil.copy(DATA / "llm" / "logs-0.29.db", path)
    db = sqlite_utils.Database(path)
    migrations.migrate(db)  # as llm does on first use
    db.close()
    log_prompts(path, openai_server, [("A new question", [])])

    report = import_log(path, home=home)
    tape = open_tape(report.tape, home=home)

    assert report.session["threads"] == 1 and report.session["legacy_conversations"] == 1
    dates = [datetime.fromisoformat(entry.date) for entry in tape.read()]
    assert dates == sorted(dates)
    users = [m["content"] for m in tape.view(None).messages if m["role"] == "user"]
    assert users == ["What is 2 + 3?", "Say hello", "A new question"]
