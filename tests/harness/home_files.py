"""A Bub home read byte by byte, with no bub_nb code: the oracle the state machine checks the product against.

Everything here parses the files the way Bub (or a person with ``json``) would: the lines of each tape, what
became of the lines seen before, who holds a notebook's conversation by a plain fold over the agents' anchors,
and which entries the ``retract``/``unretract`` events leave out. Sharing no helper with the code under test,
it does not share its bugs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FIELDS = ("id", "kind", "payload", "meta", "date")
REDACTED = re.compile(r"\[redacted sha256:[0-9a-f]{64}\]")
AGENT_SEPARATOR = "~"


def snapshot(home: Path) -> dict[str, bytes]:
    """Every file under ``home`` by its relative path, with its bytes."""
    return {str(p.relative_to(home)): p.read_bytes() for p in sorted(home.rglob("*")) if p.is_file()}


def tape_files(folder: Path) -> list[Path]:
    """The live tapes of a tapes folder (``*.jsonl``), without bub_nb's own lineage file."""
    return [p for p in sorted(folder.glob("*.jsonl")) if p.name != "session_graph.jsonl"]


def archive_files(folder: Path) -> list[Path]:
    """The archives a reset left (``<name>.jsonl.<stamp>.bak``)."""
    return sorted(folder.glob("*.jsonl.*.bak"))


def records(path: Path) -> list[dict[str, Any]]:
    """The records of a JSONL tape file; a line that is not a JSON object raises ``AssertionError`` naming it."""
    found = []
    for number, line in enumerate(path.read_bytes().split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise AssertionError(f"{path.name} line {number} is not JSON: {exc}") from None
        if not isinstance(record, dict):
            raise AssertionError(f"{path.name} line {number} is not a JSON object")
        found.append(record)
    return found


def tape_problems(path: Path) -> list[str]:
    """What makes ``path`` not a valid Bub tape: fields other than exactly id, kind, payload, meta, date, ids
    that are not 1, 2, 3, ... without a gap, or a file that does not end with a newline."""
    problems = []
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        problems.append(f"{path.name} does not end with a newline (a torn last line)")
    for position, record in enumerate(records(path), 1):
        if tuple(record) != FIELDS and sorted(record) != sorted(FIELDS):
            problems.append(f"{path.name} line {position} has fields {sorted(record)}")
        if record.get("id") != position:
            problems.append(f"{path.name} line {position} has id {record.get('id')!r}, not {position}")
            break
        if not isinstance(record.get("kind"), str) or not isinstance(record.get("payload"), dict):
            problems.append(f"{path.name} #{position} has kind {record.get('kind')!r} and a non-object payload")
        if not isinstance(record.get("date"), str):
            problems.append(f"{path.name} #{position} has no ISO date")
    return problems


def same_but_redacted(old: Any, new: Any) -> bool:
    """``new`` is ``old`` but for texts replaced by ``[redacted sha256:…]`` markers (wholly or inside the text)."""
    if isinstance(old, str) and isinstance(new, str):
        return old == new or bool(REDACTED.search(new))
    if isinstance(old, dict) and isinstance(new, dict):
        return old.keys() == new.keys() and all(same_but_redacted(old[k], new[k]) for k in old)
    if isinstance(old, list) and isinstance(new, list):
        return len(old) == len(new) and all(same_but_redacted(a, b) for a, b in zip(old, new, strict=True))
    return bool(old == new)


def texts_of(value: Any) -> Iterator[str]:
    """Every string inside a JSON value, keys left out."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from texts_of(item)
    elif isinstance(value, list):
        for item in value:
            yield from texts_of(item)


def retracted_ids(tape: list[dict[str, Any]]) -> set[int]:
    """The ids a tape's ``retract`` and ``unretract`` events leave retracted, in tape order."""
    out: set[int] = set()
    for record in tape:
        payload = record.get("payload") or {}
        if record.get("kind") != "event" or payload.get("name") not in ("retract", "unretract"):
            continue
        data = payload.get("data") or {}
        ids = {i for pair in data.get("ids") or [] for i in range(int(pair[0]), int(pair[1]) + 1)}
        (out.update if payload["name"] == "retract" else out.difference_update)(ids)
    return out


def notebook_of(tape: str) -> str:
    """The notebook tape an agent's tape (``<notebook>~<agent>``) belongs to."""
    return tape.split(AGENT_SEPARATOR, 1)[0]


def agents_on_disk(folder: Path, notebook: str) -> dict[str, Path]:
    """The agents of a notebook whose tapes exist: ``main`` on the notebook's tape, the others on their own."""
    found = {"main": folder / f"{notebook}.jsonl"} if (folder / f"{notebook}.jsonl").exists() else {}
    for path in folder.glob(f"{notebook}{AGENT_SEPARATOR}*.jsonl"):
        found[path.name[len(notebook) + 1 : -len(".jsonl")]] = path
    return found


@dataclass(frozen=True)
class Received:
    """One handoff an agent's tape records receiving."""

    timestamp: str
    sender: str
    receiver: str
    ownership: str


def received(folder: Path, notebook: str) -> list[Received]:
    """Every handoff between the notebook's agents, as the receivers' anchors record it, oldest first."""
    found = []
    for agent, path in agents_on_disk(folder, notebook).items():
        for record in records(path):
            state = (record.get("payload") or {}).get("state") if record.get("kind") == "anchor" else None
            handoff = state.get("context_handoff") if isinstance(state, dict) else None
            if not isinstance(handoff, dict) or handoff.get("to") != f"agent:{agent}":
                continue
            content = handoff.get("content") if isinstance(handoff.get("content"), dict) else {}
            sender = str(handoff.get("from", "")).removeprefix("agent:")
            found.append(
                Received(str(handoff.get("timestamp", "")), sender, agent, content.get("ownership", "transfer"))
            )
    return sorted(found, key=lambda r: r.timestamp)


def holder(folder: Path, notebook: str) -> str:
    """Who holds the notebook's conversation by a fold over its agents' tapes: the receiver of the newest transfer,
    else ``main``."""
    transfers = [r for r in received(folder, notebook) if r.ownership == "transfer"]
    return transfers[-1].receiver if transfers else "main"


def handed_away(folder: Path, notebook: str) -> set[str]:
    """The agents that transferred the conversation and were handed nothing since (a transfer or a share): the
    ones whose turns must be refused."""
    away: set[str] = set()
    for handoff in received(folder, notebook):
        if handoff.ownership == "transfer":
            away.add(handoff.sender)
        away.discard(handoff.receiver)
    return away
