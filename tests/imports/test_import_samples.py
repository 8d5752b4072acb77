"""Every published Claude Code and Codex sample, imported then exported as spans, against a plain reading of its log.

The oracle is a ``json`` pass over the raw records that shares no code with the importers: the last usage of
each Claude Code message id, Codex's last ``total_token_usage``, and every call id with its result.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from harness.logs import DATA

from bub_nb import import_log, open_tape
from bub_nb.export import genai as g
from bub_nb.export import tape_spans
from bub_nb.tape.entries import TapeEntry

SAMPLES = sorted([*(DATA / "claude-code").glob("*.jsonl"), *(DATA / "codex").glob("*.jsonl")])
CALLS = {"tool_use": "id", "function_call": "call_id", "custom_tool_call": "call_id"}
RESULTS = {"tool_result": "tool_use_id", "function_call_output": "call_id", "custom_tool_call_output": "call_id"}


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _blocks(record: dict[str, Any]) -> list[dict[str, Any]]:
    """A record's content blocks (Claude Code) or its one item (Codex)."""
    payload = record.get("payload")
    if isinstance(payload, dict) and record.get("type") == "response_item":
        return [payload]
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def oracle(path: Path) -> dict[str, Any]:
    """What the raw log says: its tokens, the ids of its calls, and the ids its results answer."""
    calls: list[str] = []
    answered: set[str] = set()
    usage: dict[str, dict[str, Any]] = {}  # Claude Code: the last usage written for each message id
    final: dict[str, Any] = {}  # Codex: the last running total
    for record in _records(path):
        for block in _blocks(record):
            if (kind := block.get("type")) in CALLS:
                calls.append(str(block[CALLS[kind]]))
            elif kind in RESULTS:
                answered.add(str(block[RESULTS[kind]]))
        message = record.get("message")
        if isinstance(message, dict) and isinstance(message.get("usage"), dict):
            usage[str(message.get("id"))] = message["usage"]
        payload = record.get("payload")
        info = payload.get("info") if isinstance(payload, dict) and payload.get("type") == "token_count" else None
        if isinstance(info, dict) and isinstance(info.get("total_token_usage"), dict):
            final = info["total_token_usage"]
    tokens = {
        g.INPUT_TOKENS: sum(
            u.get("input_tokens", 0) + u.get("cache_read_input_tokens", 0) + u.get("cache_creation_input_tokens", 0)
            for u in usage.values()
        )
        + final.get("input_tokens", 0),
        g.OUTPUT_TOKENS: sum(u.get("output_tokens", 0) for u in usage.values()) + final.get("output_tokens", 0),
        g.CACHE_READ_TOKENS: sum(u.get("cache_read_input_tokens", 0) for u in usage.values())
        + final.get("cached_input_tokens", 0),
        g.CACHE_CREATION_TOKENS: sum(u.get("cache_creation_input_tokens", 0) for u in usage.values()),
    }
    return {"calls": calls, "answered": answered, "tokens": tokens}


def results_by_call(entries: list[TapeEntry]) -> dict[str, list[Any]]:
    """Each call id on the tape with every result the tape gives it: a ``tool_result`` answers, in order, the
    calls of the latest unanswered ``tool_call`` of its run, or the ids it names (a result whose call is absent)."""
    open_calls: list[TapeEntry] = []
    found: dict[str, list[Any]] = defaultdict(list)
    for entry in entries:
        if entry.kind == "tool_call":
            open_calls.append(entry)
            for call in entry.payload["calls"]:
                found.setdefault(call["id"], [])
        elif entry.kind == "tool_result" and "call_ids" in entry.meta:
            for call_id, result in zip(entry.meta["call_ids"], entry.payload["results"], strict=True):
                found[call_id].append(result)
        elif entry.kind == "tool_result":
            call = next(c for c in reversed(open_calls) if c.meta.get("run_id") == entry.meta.get("run_id"))
            open_calls.remove(call)
            ids = [c["id"] for c in call.payload["calls"]]
            for call_id, result in zip(ids, entry.payload["results"], strict=True):
                found[call_id].append(result)
    return found


def _missing(result: Any) -> bool:
    return isinstance(result, dict) and result.get("kind") == "missing_result"


@pytest.mark.parametrize("sample", SAMPLES, ids=[f"{p.parent.name}/{p.name[:40]}" for p in SAMPLES])
def test_every_sample_gives_each_run_a_chat_span_and_each_call_one_result(sample: Path, tmp_path: Path) -> None:
    check_against_oracle(sample, tmp_path)


def check_against_oracle(sample: Path, home: Path) -> list[TapeEntry]:
    """Import ``sample`` into ``home`` and check its tape and spans against the oracle; returns the entries."""
    expected = oracle(sample)
    tape = open_tape(import_log(sample, home=home).tape, home=home)
    entries = tape.read()

    runs = [e for e in entries if e.kind == "event" and e.name == "run" and e.payload["data"].get("usage")]
    chats = [s for s in tape_spans(tape.name, entries).spans if s.attributes.get(g.OPERATION) == g.CHAT]
    with_usage = [c for c in chats if g.INPUT_TOKENS in c.attributes]
    assert len(with_usage) == len(runs)
    assert {c.trace_id for c in with_usage} == {c.trace_id for c in chats}  # each run's usage on its own trace
    for attribute, tokens in expected["tokens"].items():
        assert sum(int(c.attributes.get(attribute, 0)) for c in chats) == tokens, attribute

    results = results_by_call(entries)
    assert all(len(given) == 1 for given in results.values()), results  # never a result and a missing one
    for call_id in expected["calls"]:
        assert _missing(results[call_id][0]) is (call_id not in expected["answered"]), call_id
    orphans = expected["answered"] - set(expected["calls"])
    assert {call_id for call_id, given in results.items() if call_id not in expected["calls"]} == orphans
    return entries


def _sub_agent(agent: str, session: str, start: int) -> list[dict[str, Any]]:
    """One sub-agent's records as Claude Code writes them in its parent's log: its reply's records name no
    agent, the record holding its call's result does; each record links to the one before it."""
    base = {"isSidechain": True, "sessionId": session, "type": "assistant", "timestamp": f"2025-11-19T22:5{start}:00Z"}
    usage = {"input_tokens": 3, "cache_creation_input_tokens": 100 * start, "cache_read_input_tokens": 0}
    reply = {"id": f"msg_{agent}", "model": "claude-sonnet-4-5", "role": "assistant"}
    text = {"type": "text", "text": f"{agent} looks."}
    call = {"type": "tool_use", "id": f"toolu_{agent}", "name": "Grep", "input": {"pattern": agent}}
    result = {"type": "tool_result", "tool_use_id": f"toolu_{agent}", "content": f"found {agent}"}
    answer = {"id": f"msg_{agent}_2", "model": "claude-sonnet-4-5", "role": "assistant"}
    return [
        {**base, "uuid": f"{agent}-1", "parentUuid": None, "requestId": f"req_{agent}",
         "message": {**reply, "content": [text], "usage": {**usage, "output_tokens": 1}}},
        {**base, "uuid": f"{agent}-2", "parentUuid": f"{agent}-1", "requestId": f"req_{agent}",
         "message": {**reply, "content": [call], "usage": {**usage, "output_tokens": 20 + start}}},
        {**base, "uuid": f"{agent}-3", "parentUuid": f"{agent}-2", "type": "user", "agentId": agent,
         "message": {"role": "user", "content": [result]}},
        {**base, "uuid": f"{agent}-4", "parentUuid": f"{agent}-3", "requestId": f"req_{agent}_2",
         "message": {**answer, "content": [{"type": "text", "text": "done"}], "usage": {**usage, "output_tokens": 5}}},
    ]  # fmt: skip


def test_two_sub_agents_interleaved_in_their_parents_log_keep_their_replies_whole(tmp_path: Path) -> None:
    session = "88a8d761-7b9a-4bf1-a8ca-c1febe6bf358"
    main = {"isSidechain": False, "sessionId": session, "uuid": "m-1", "parentUuid": None, "type": "user",
            "timestamp": "2025-11-19T22:50:00Z", "message": {"role": "user", "content": "Research both."}}  # fmt: skip
    first, second = _sub_agent("a1", session, 1), _sub_agent("b2", session, 2)
    interleaved = [main, *(record for pair in zip(first, second, strict=True) for record in pair)]
    log = tmp_path / f"{session}.jsonl"
    log.write_text("".join(json.dumps(record) + "\n" for record in interleaved), encoding="utf-8")

    entries = check_against_oracle(log, tmp_path / "home")

    for agent in ("a1", "b2"):
        own = [(e.kind, e.name) for e in entries if e.meta.get("run_id") == f"req_{agent}"]
        assert own == [("tool_call", None), ("tool_result", None), ("event", "run")], agent
