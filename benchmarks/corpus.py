"""The benchmark tapes: what bub_nb itself writes, turn after turn, built once and cached by size.

Each turn is a system prompt, the user's message, a tool round every other turn, the answer and a
``run`` event with usage; a phase handoff comes about every 50 entries and a new memory zone every
5,000. Lines are written straight to the file (building a 1M-entry tape through the API would time
the appends, which have their own figure).
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
from _common import cache_dir

from bub_nb.agent.builtin import DEFAULT_INSTRUCTIONS

FORMAT = 3  # bump when the generated tapes change, so stale caches are not reused
ANCHOR_EVERY = 50
MEMORY_EVERY = 5000
_TOOLS = ("tape_search", "memory_recall", "tape_info", "tape_anchors")
START = datetime(2026, 1, 1, tzinfo=UTC)

Record = tuple[str, dict[str, Any], dict[str, Any]]


def _turn(turn: int) -> Iterator[Record]:
    run = {"run_id": f"{turn:016x}", "source": "benchmark"}
    yield "system", {"content": DEFAULT_INSTRUCTIONS + f"\n\n<runtime>\nturn: {turn}\n</runtime>"}, run
    question = f"Question {turn}: how does the tape keep step {turn % 97} of the analysis reproducible?"
    yield "message", {"role": "user", "content": question}, run
    if turn % 2 == 0:
        function = {"name": _TOOLS[turn % 4], "arguments": orjson.dumps({"query": f"s{turn}"}).decode()}
        call = {"id": f"call_{turn}", "type": "function", "function": function}
        yield "tool_call", {"calls": [call]}, run
        yield "tool_result", {"results": [f"- #{turn} message: step {turn % 97} was recorded with its inputs"]}, run
    answer = f"Step {turn % 97} is reproducible because every input is on the tape. " * 3
    yield "message", {"role": "assistant", "content": answer.strip()}, run
    usage = {"prompt_tokens": 900 + turn % 400, "completion_tokens": 60 + turn % 40}
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    data = {"status": "ok", "usage": usage, "model": "openai:bench", "elapsed_ms": 812.5, "steps": 1}
    yield "event", {"name": "run", "data": data}, run


def _memory_zone(version: int, day: str) -> Iterator[Record]:
    state = {"version": version}
    yield "anchor", {"name": "memory/open", "state": state}, {}
    note = {"content": f"Prefers tables over prose (zone {version}).", "updated_at": day}
    yield "event", {"name": "memory.long_term", "data": note}, {}
    daily = {"date": day[:10], "content": f"# {day[:10]}\n\n- benchmark zone {version}", "updated_at": day}
    yield "event", {"name": "memory.daily", "data": daily}, {}
    yield "anchor", {"name": "memory/seal", "state": state}, {}


def records() -> Iterator[Record]:
    """An endless tape: turns, a phase handoff about every 50 entries, a new memory zone now and then."""
    yield "anchor", {"name": "session/start", "state": {"owner": "human"}}, {}
    yield "event", {"name": "handoff", "data": {"name": "session/start", "state": {"owner": "human"}}}, {}
    since_anchor = since_memory = MEMORY_EVERY
    phase = version = 0
    for turn in itertools.count():
        if since_memory >= MEMORY_EVERY:
            version, since_memory = version + 1, 0
            yield from _memory_zone(version, (START + timedelta(days=version)).isoformat())
        if since_anchor >= ANCHOR_EVERY:
            phase, since_anchor = phase + 1, 0
            state = {"summary": f"phase {phase} done", "next_steps": f"start phase {phase + 1}"}
            yield "anchor", {"name": f"phase/{phase}", "state": state}, {}
            yield "event", {"name": "handoff", "data": {"name": f"phase/{phase}", "state": state}}, {}
        for record in _turn(turn):
            since_anchor += 1
            since_memory += 1
            yield record


def build(path: Path, entries: int) -> None:
    """Write ``entries`` entries to ``path`` (atomically, so a cancelled build leaves no half tape)."""
    partial = path.with_name(path.name + ".partial")
    with open(partial, "wb") as handle:
        batch: list[bytes] = []
        for number, (kind, payload, meta) in enumerate(itertools.islice(records(), entries), start=1):
            date = (START + timedelta(milliseconds=number)).isoformat()
            batch.append(orjson.dumps({"id": number, "kind": kind, "payload": payload, "meta": meta, "date": date}))
            if len(batch) >= 10_000:
                handle.write(b"\n".join(batch) + b"\n")
                batch.clear()
        if batch:
            handle.write(b"\n".join(batch) + b"\n")
    os.replace(partial, path)


def cached_tape(entries: int) -> Path:
    """The path of the benchmark tape of ``entries`` entries, built on first use (no index yet)."""
    path = cache_dir("corpus") / f"tape-v{FORMAT}-{entries}.jsonl"
    if not path.exists():
        print(f"building a tape of {entries:,} entries in {path} …", file=sys.stderr, flush=True)
        build(path, entries)
        for sidecar in (".idx", ".lock"):
            Path(str(path) + sidecar).unlink(missing_ok=True)
    return path
