"""Every record of a log is accounted for, whatever the log holds; refusals write nothing; formats are told apart."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from harness.logs import DATA
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bub_nb import MemoryTapeStore, import_log, open_tape
from bub_nb.errors import LogImportError
from bub_nb.imports import detect_format
from bub_nb.imports.draft import UNMAPPED

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
times = st.one_of(
    st.none(), st.just("2025-11-19T22:53:34.908Z"), st.just("not a time"), st.integers(), st.floats(allow_nan=True)
)
ids = st.sampled_from(["call_1", "call_2", "toolu_1", ""])
claude_blocks = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=10)}),
    st.fixed_dictionaries({"type": st.just("thinking"), "thinking": st.text(max_size=10)}),
    st.fixed_dictionaries({"type": st.just("tool_use"), "id": ids, "name": st.text(max_size=5), "input": json_values}),
    st.fixed_dictionaries({"type": st.just("tool_result"), "tool_use_id": ids, "content": json_values}),
    st.fixed_dictionaries({"type": st.just("image"), "source": json_values}),
    json_values,
)
claude_records = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["user", "assistant", "system", "summary", "file-history-snapshot", "other"]),
        "sessionId": st.just("s"),
        "timestamp": times,
        "isSidechain": st.booleans(),
        "message": st.one_of(
            json_values,
            st.fixed_dictionaries(
                {
                    "role": st.sampled_from(["user", "assistant"]),
                    "content": st.text(max_size=10) | st.lists(claude_blocks, max_size=4),
                },
                optional={
                    "id": st.sampled_from(["m1", "m2"]),
                    "usage": json_values | st.fixed_dictionaries({"input_tokens": st.integers(0, 9)}),
                },
            ),
        ),
    },
    optional={"subtype": st.sampled_from(["compact_boundary", "other"]), "summary": st.text(max_size=5) | json_values},
)
codex_items = st.one_of(
    st.fixed_dictionaries(
        {
            "type": st.just("message"),
            "role": st.sampled_from(["user", "assistant", "developer"]),
            "content": st.lists(
                st.fixed_dictionaries({"type": st.just("input_text"), "text": st.text(max_size=8)}), max_size=2
            )
            | json_values,
        }
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("function_call"),
            "call_id": ids,
            "name": st.text(max_size=5),
            "arguments": st.text(max_size=8),
        }
    ),
    st.fixed_dictionaries({"type": st.just("function_call_output"), "call_id": ids, "output": json_values}),
    st.fixed_dictionaries({"type": st.sampled_from(["reasoning", "web_search_call", "unknown"])}),
)
codex_records = st.fixed_dictionaries(
    {
        "timestamp": times,
        "type": st.sampled_from(["session_meta", "turn_context", "response_item", "event_msg", "compacted", "other"]),
        "payload": st.one_of(
            codex_items,
            st.fixed_dictionaries(
                {
                    "type": st.sampled_from(["token_count", "user_message", "task_started", "strange"]),
                    "info": json_values | st.fixed_dictionaries({"last_token_usage": json_values}),
                }
            ),
            json_values,
        ),
    }
)
not_json = st.text(min_size=1, max_size=12).filter(lambda s: "\n" not in s and "\r" not in s and s.strip())
lines = st.lists(
    st.one_of(claude_records.map(json.dumps), codex_records.map(json.dumps), json_values.map(json.dumps), not_json),
    min_size=1,
    max_size=12,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=lines, format=st.sampled_from(["claude-code", "codex"]))
def test_every_record_of_any_log_is_mapped_or_kept_never_dropped(tmp_path: Path, lines: list[str], format: str) -> None:
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")
    records = sum(1 for line in path.read_bytes().splitlines() if line.strip())
    store = MemoryTapeStore()

    report = import_log(path, format, name="log", store=store)

    assert report.records == records
    assert report.mapped + report.kept == report.records
    entries = open_tape("log", store=store).read()
    assert report.entries == len(entries)
    referenced = {number for entry in entries for number in entry.meta.get("records", ())}
    assert referenced == set(range(1, records + 1))
    kept = [e for e in entries if e.kind == "event" and e.name == UNMAPPED]
    assert len({e.payload["data"]["record"] for e in kept}) == report.kept
    assert all(datetime.fromisoformat(e.date).utcoffset() == timedelta(0) for e in entries)


def test_an_import_into_a_tape_with_a_history_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    store = MemoryTapeStore()
    tape = open_tape("taken", store=store)
    tape.append_message({"role": "user", "content": "mine"})
    with pytest.raises(LogImportError, match="'taken' already holds 1 entries"):
        import_log(DATA / "atif" / "rfc-0001-example.json", name="taken", store=store)
    assert len(tape) == 1


def test_a_log_that_cannot_be_read_writes_no_tape(tmp_path: Path) -> None:
    broken = tmp_path / "trajectory.json"
    broken.write_text('{"schema_version": "ATIF-v1.4", "steps": [')
    store = MemoryTapeStore()
    with pytest.raises(LogImportError, match="not one JSON document"):
        import_log(broken, "atif", store=store)
    assert store.list_tapes() == []


@pytest.mark.parametrize(
    ("sample", "expected"),
    [
        ("claude-code/sidechain_integrated.jsonl", "claude-code"),
        ("claude-code/dag_compact_after_rewind.jsonl", "claude-code"),
        ("codex/sample_codex_session.jsonl", "codex"),
        ("codex/rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl", "codex"),
        ("atif/rfc-0001-example.json", "atif"),
    ],
)
def test_the_format_of_each_sample_is_told_from_its_first_records(sample: str, expected: str) -> None:
    assert detect_format(DATA / sample) == expected


def test_sqlite_logs_are_told_apart_by_their_tables(llm_logs: Path, agents_session: Path, tmp_path: Path) -> None:
    assert detect_format(llm_logs) == "llm"
    assert detect_format(agents_session) == "agents-sdk"
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE notes (text TEXT)")
    with pytest.raises(LogImportError, match=r"its tables: notes\); pass format="):
        detect_format(other)


@pytest.mark.parametrize("content", ["just some text\n", '{"hello": "world"}\n', ""])
def test_a_file_in_no_known_format_is_refused_with_the_formats_named(tmp_path: Path, content: Any) -> None:
    path = tmp_path / "notes.txt"
    path.write_text(content)
    with pytest.raises(LogImportError, match="claude-code, codex, llm, agents-sdk, atif"):
        import_log(path, store=MemoryTapeStore())
    with pytest.raises(LogImportError, match="Format 'jsonl' is not one an import reads"):
        import_log(path, "jsonl", store=MemoryTapeStore())


atif_steps = st.one_of(
    st.fixed_dictionaries(
        {
            "step_id": st.integers(1, 9),
            "source": st.sampled_from(["system", "user", "agent", "tool", ""]),
            "message": st.text(max_size=8) | json_values,
        },
        optional={
            "timestamp": times,
            "tool_calls": st.lists(
                st.fixed_dictionaries(
                    {"tool_call_id": ids, "function_name": st.text(max_size=4), "arguments": json_values}
                )
                | json_values,
                max_size=3,
            ),
            "observation": st.fixed_dictionaries(
                {
                    "results": st.lists(
                        st.fixed_dictionaries({}, optional={"source_call_id": ids, "content": json_values}), max_size=3
                    )
                }
            )
            | json_values,
            "metrics": st.fixed_dictionaries(
                {}, optional={"prompt_tokens": st.integers(0, 9), "cached_tokens": json_values}
            ),
            "extra": st.fixed_dictionaries(
                {
                    "bub": json_values
                    | st.fixed_dictionaries({"anchor": json_values, "event": json_values, "run": json_values})
                }
            ),
        },
    ),
    json_values,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(atif_steps, max_size=10))
def test_every_step_of_any_trajectory_is_mapped_or_kept(tmp_path: Path, steps: list[Any]) -> None:
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps({"schema_version": "ATIF-v1.6", "session_id": "s", "agent": {}, "steps": steps}))
    store = MemoryTapeStore()

    report = import_log(path, name="trajectory", store=store)

    assert report.format == "atif"
    assert report.records == len(steps) == report.mapped + report.kept
    entries = open_tape("trajectory", store=store).read()
    assert {n for e in entries for n in e.meta.get("records", ())} == set(range(1, len(steps) + 1))


responses_items = st.one_of(
    codex_items,
    st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "system"]), "content": st.text(max_size=8)}),
    st.fixed_dictionaries({"type": st.sampled_from(["compaction", "computer_call", "mcp_call"])}),
    st.dictionaries(st.text(max_size=5), json_values, max_size=3),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sessions=st.lists(st.lists(responses_items, max_size=6), min_size=1, max_size=3))
def test_every_item_an_agents_sdk_session_holds_is_mapped_or_kept(tmp_path: Path, sessions: list[list[Any]]) -> None:
    """The SDK's own ``SQLiteSession.add_items`` writes whatever items; each one is accounted for."""
    agents = pytest.importorskip("agents", reason="the Agents SDK writes these sessions (pip install -e '.[imports]')")
    path = tmp_path / f"sessions-{len(list(tmp_path.iterdir()))}.db"

    async def write() -> None:
        for number, items in enumerate(sessions):
            session = agents.SQLiteSession(f"session-{number}", path)
            if items:
                await session.add_items(items)
            else:
                await session.get_items()  # a session row with no items
            session.close()

    asyncio.run(write())
    store = MemoryTapeStore()

    report = import_log(path, name="sessions", store=store)

    rows = sqlite3.connect(path).execute("SELECT (SELECT count(*) FROM agent_sessions) + count(*) FROM agent_messages")
    assert report.records == rows.fetchone()[0] == report.mapped + report.kept
    entries = open_tape("sessions", store=store).read()
    assert {n for e in entries for n in e.meta.get("records", ())} == set(range(1, report.records + 1))
