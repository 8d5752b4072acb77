"""Homes of tapes written line by line as Bub and bub_nb write them, for the frame's oracle test and benchmark.

Nothing here imports ``bub_nb``: the lines are spelled out, so a frame read of them is checked against what the
writers put down, not against what bub_nb's own writer would.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

STYLES = ("bub", "bub_nb", "messages")  # who wrote a turn's tool calls: Bub, bub_nb, or chat messages


@dataclass
class Writer:
    """One tape file written line by line, as Bub (``", "`` separators) or bub_nb (compact) writes it."""

    name: str
    bub: bool
    lines: list[bytes] = field(default_factory=list)
    last_id: int = 0
    clock: int = 0
    dates: str = "plain"

    def _date(self) -> dict[str, Any]:
        self.clock += 1
        moment = pd.Timestamp("2025-11-03T08:00:00Z") + pd.Timedelta(minutes=7 * self.clock)
        if self.dates == "timestamp":
            return {"timestamp": moment.timestamp()}
        spelled = {
            "plain": moment.isoformat(),
            "zulu": moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "naive": moment.strftime("%Y-%m-%dT%H:%M:%S.%f"),
            "offset": moment.tz_convert("Etc/GMT-2").isoformat(),
        }[self.dates]
        return {"date": spelled}

    def entry(self, kind: str, payload: dict[str, Any], meta: dict[str, Any] | None = None) -> int:
        self.last_id += 1
        record = {"id": self.last_id, "kind": kind, "payload": payload, "meta": meta or {}, **self._date()}
        separators = (", ", ": ") if self.bub else (",", ":")
        self.lines.append(json.dumps(record, separators=separators, ensure_ascii=not self.bub).encode())
        return self.last_id

    def bad_byte(self, text: str) -> None:
        """A user message whose text holds a byte that is not UTF-8 (Latin-1 text pasted in)."""
        self.entry("message", {"role": "user", "content": f"{text} caf@"})
        self.lines[-1] = self.lines[-1].replace(b"caf@", b"caf\xe9")

    def text(self) -> bytes:
        return b"".join(line + b"\n" for line in self.lines)


def turn(tape: Writer, style: str, calls: list[tuple[str, str]], tokens: tuple[int, int], run: str) -> None:
    """A turn with tool calls, each succeeding or failing in the shape ``style``'s writer gives it."""
    meta = {"run_id": run}
    tape.entry("message", {"role": "user", "content": f"please {run}"}, meta)
    ids = [f"call_{run}_{number}" for number in range(len(calls))]
    wire = [
        {"id": i, "type": "function", "function": {"name": tool, "arguments": "{}"}}
        for i, (tool, _) in zip(ids, calls, strict=True)
    ]
    results: list[Any] = []
    errors: list[dict[str, Any]] = []
    for call_id, (tool, outcome) in zip(ids, calls, strict=True):
        if outcome in ("ok", "unanswered"):
            results.append(f"{tool} said fine")
        elif outcome == "error_key":
            results.append({"error": f"{tool} raised"})
        else:
            results.append({"kind": "tool", "message": "Command exited with 1"})
            details = {"tool": tool} if outcome == "bub_failed" else {"tool": tool, "call_id": call_id}
            errors.append(
                {
                    "kind": "tool" if outcome == "bub_failed" else "tool.tool",
                    "message": f"{tool}: exited 1",
                    "details": details,
                }
            )
    answered = [result for result, (_, outcome) in zip(results, calls, strict=True) if outcome != "unanswered"]
    if calls and style == "messages":
        tape.entry("message", {"role": "assistant", "content": "", "tool_calls": wire}, meta)
        for call_id, result, (_, outcome) in zip(ids, results, calls, strict=True):
            if outcome != "unanswered":
                tape.entry("message", {"role": "tool", "tool_call_id": call_id, "content": json.dumps(result)}, meta)
    elif calls:
        tape.entry("tool_call", {"calls": wire}, meta)
        if len(answered) == len(results):
            tape.entry("tool_result", {"results": results}, meta)
    for error in errors:
        tape.entry("error", error, meta)
    tape.entry("message", {"role": "assistant", "content": "done"}, meta)
    usage = {"prompt_tokens": tokens[0], "completion_tokens": tokens[1], "total_tokens": sum(tokens)}
    tape.entry("event", {"name": "run", "data": {"status": "ok", "model": "gpt-4o-mini", "usage": usage}}, meta)


def play(tape: Writer, steps: list[Any], runs: list[int]) -> None:
    for step in steps:
        match step:
            case ("anchor", name):
                tape.entry("anchor", {"name": name, "state": {"owner": "human"}} if name else {"state": {}})
            case ("user", text):
                tape.entry("message", {"role": "user", "content": text})
            case ("turn", style, calls, tokens):
                runs[0] += 1
                turn(tape, style, calls, tokens, f"r{runs[0]}")
            case ("retract" | "unretract" as verb, first, width, *_):
                if tape.last_id:
                    start = 1 + first % tape.last_id
                    last = min(tape.last_id, start + (width if verb == "retract" else 0))
                    tape.entry("event", {"name": verb, "data": {"ids": [[start, last]], "reason": "typo"}})
            case ("bad_byte",):
                tape.bad_byte("naive")
            case ("garbage",):
                tape.lines.append(b"this line is not JSON")


def write_home(folder: Path, tapes: list[dict[str, Any]]) -> None:
    tapes_dir = folder / "tapes"
    tapes_dir.mkdir(parents=True)
    written: list[Writer] = []
    runs = [0]
    for number, spec in enumerate(tapes):
        name = f"{number:016x}__{'b' * 16}" + ("~helper" if spec["agent"] else "")
        tape = Writer(name, spec["bub"], dates=spec["dates"])
        if spec["fork"] is not None and written:
            parent = written[spec["fork"] % len(written)]
            for line in parent.lines[spec["fork"] % max(len(parent.lines), 1) :]:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                address = f"tape://{parent.name}/entry/{record['id']}"
                tape.entry(record["kind"], record["payload"], {**record["meta"], "forked_from": address})
            tape.entry("anchor", {"name": "intention", "state": {"intention": "try again"}})
        if spec["reset"]:
            play(tape, spec["steps"], runs)
            (tapes_dir / f"{name}.jsonl.20260101T000000Z.bak").write_bytes(tape.text())
            tape = Writer(name, spec["bub"], dates=spec["dates"], clock=tape.clock)
            tape.entry("anchor", {"name": "session/start", "state": {"owner": "human"}})
            play(tape, spec["steps"][::-1], runs)
        else:
            play(tape, spec["steps"], runs)
        text = tape.text() + (b'{"id": 999, "kind": "mess' if spec["torn"] else b"")
        (tapes_dir / f"{name}.jsonl").write_bytes(text)
        written.append(tape)


OUTCOMES = ("ok", "ok", "bub_failed", "bub_nb_failed", "error_key", "unanswered")


def generated_home(
    folder: Path,
    tapes: int = 6,
    steps: int = 30,
    seed: int = 3,
    *,
    styles: tuple[str, ...] = STYLES,
    outcomes: tuple[str, ...] = OUTCOMES,
    odd: bool = True,
) -> Path:
    """A home of ``tapes`` tapes as Bub and bub_nb write them: turns whose calls fail in each writer's shape, with
    every spelling of a date; ``odd`` adds retractions, bad bytes, a fork and a torn last line."""
    pick = random.Random(seed)

    def step() -> tuple[Any, ...]:
        roll = pick.random()
        if roll < 0.1:
            return ("anchor", pick.choice(("phase/plan", "phase/build", "memory/open")))
        if roll < 0.2:
            return ("user", "a question")
        if odd and roll < 0.25:
            return ("retract", pick.randrange(30), pick.randrange(3))
        if odd and roll < 0.27:
            return ("bad_byte",)
        calls = [(pick.choice(("bash", "fs.read")), pick.choice(outcomes)) for _ in range(pick.randrange(3))]
        return ("turn", pick.choice(styles), calls, (pick.randrange(9000), pick.randrange(900)))

    specs = [
        {
            "steps": [("anchor", "session/start"), *(step() for _ in range(steps))],
            "bub": number % 2 == 0,
            "dates": ("plain", "zulu", "naive", "offset", "timestamp", "plain")[number % 6],
            "agent": False,
            "reset": False,
            "torn": odd and number == 1,
            "fork": 0 if odd and number == 2 else None,
        }
        for number in range(tapes)
    ]
    write_home(folder, specs)
    return folder
