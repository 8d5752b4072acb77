"""Retraction: a ``retract`` event takes entries out of every view from then on; ``unretract`` brings them back.

What can be retracted is what can reach the model: ``message``, ``tool_call`` and ``tool_result`` entries,
and the events a request carries: a recorded cell (``notebook.cell``, sent by the ``notebook`` mode) and the
memory zone's notes (``memory.long_term``, ``memory.daily``, in the next system prompt). An anchor is a phase
boundary (a handoff starts a new phase instead), and other events, system prompts and errors never reach a
request, so there is nothing to take back; a range holding an anchor is refused, the other events and system
prompts inside a range are passed over. A call and its answers go together: retracting a
``tool_call`` retracts its ``tool_result`` and the reverse, and an assistant message with ``tool_calls`` goes
with the ``tool`` messages that answer it, so no view is ever left with half a pair.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Final

from bub_nb.errors import EntryNotFoundError, RetractionError
from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.events import RETRACT, UNRETRACT, id_ranges, retracted_ids
from bub_nb.tape.stores.protocol import TapeStore

RETRACTABLE: Final = ("message", "tool_call", "tool_result")
"""The kinds of entry that reach a view, and so can be taken back."""

RETRACTABLE_EVENTS: Final = ("notebook.cell", "memory.long_term", "memory.daily")
"""The events that reach a request (a recorded cell, the memory zone's notes), and so can be taken back too."""


def reaches_requests(entry: TapeEntry) -> bool:
    """Whether ``entry`` can reach what a model receives, and so be retracted."""
    return entry.kind in RETRACTABLE or (entry.kind == "event" and entry.name in RETRACTABLE_EVENTS)


#: How far before the first asked id the entries are read, to find the call a result answers.
LOOK_BACK: Final = 256

_SPAN = re.compile(r"#?([0-9]{1,18})(?:\s*[-–]\s*#?([0-9]{1,18}))?")

Target = int | str | range


def parse_span(target: Target) -> tuple[int, int]:
    """The first and last id a target names: ``7``, ``"7"``, ``"#7"``, ``"5-9"``, ``"#5-#9"`` or ``range(5, 10)``."""
    if isinstance(target, bool):
        raise RetractionError(f"Entries are named by id (7) or range (5-9), got {target!r}")
    if isinstance(target, int):
        first = last = target
    elif isinstance(target, range) and target.step == 1 and len(target):
        first, last = target.start, target.stop - 1
    elif isinstance(target, str) and (found := _SPAN.fullmatch(target.strip())):
        first = int(found.group(1))
        last = int(found.group(2)) if found.group(2) else first
    else:
        raise RetractionError(f"Entries are named by id (7) or range (5-9), got {target!r}")
    if first < 1:
        raise RetractionError(f"Entry ids start at 1, got {target!r}")
    if last < first:
        raise RetractionError(f"Range {target!r} runs backwards; write it first-last, as in {last}-{first}")
    return first, last


def spelled(first: int, last: int) -> str:
    return f"#{first}" if first == last else f"#{first}-#{last}"


def pair_groups(entries: Iterable[TapeEntry]) -> dict[int, frozenset[int]]:
    """For each entry in a call-and-answers pair, the ids of the whole pair (as views pair them)."""
    groups: list[list[int]] = []
    open_call: list[int] | None = None  # a tool_call entry waiting for its tool_result
    open_message: tuple[list[int], set[object]] | None = None  # an assistant message's calls, and their ids
    for entry in entries:
        payload = entry.payload
        if entry.kind == "tool_call":
            open_call = [entry.id]
            groups.append(open_call)
        elif entry.kind == "tool_result" and open_call is not None:
            open_call.append(entry.id)
            open_call = None
        elif entry.kind == "message":
            calls = payload.get("tool_calls")
            if payload.get("role") == "assistant" and isinstance(calls, list) and calls:
                ids = {call.get("id") for call in calls if isinstance(call, dict)}
                open_message = ([entry.id], ids)
                groups.append(open_message[0])
            elif payload.get("role") == "tool" and open_message and payload.get("tool_call_id") in open_message[1]:
                open_message[0].append(entry.id)
            else:
                open_message = None
    return {entry_id: frozenset(group) for group in groups for entry_id in group}


def _what(entry: TapeEntry) -> str:
    article = "an" if entry.kind[:1] in "aeiou" else "a"
    return f"{article} {entry.kind}" + (f" ({entry.name})" if entry.name else "")


def _refusal(entry: TapeEntry) -> str:
    if entry.kind == "anchor":
        return f"Entry #{entry.id} is {_what(entry)}: anchors cannot be retracted (a handoff starts a phase instead)"
    return (
        f"Entry #{entry.id} is {_what(entry)}, which never reaches a request, so there is nothing to retract; "
        f"only {', '.join(RETRACTABLE)} entries and {', '.join(RETRACTABLE_EVENTS)} events can be"
    )


def chosen_ids(entries: Sequence[TapeEntry], first: int, last: int) -> list[int]:
    """The ids in ``first..last`` a retraction may take; a refusal names the entry that cannot be retracted."""
    asked = [entry for entry in entries if first <= entry.id <= last]
    if first == last:
        if not asked:
            raise EntryNotFoundError(f"Entry #{first} is not on the tape (it was never written or cannot be read)")
        if not reaches_requests(asked[0]):
            raise RetractionError(_refusal(asked[0]))
        return [first]
    anchors = [entry for entry in asked if entry.kind == "anchor"]
    if anchors:
        raise RetractionError(
            f"Range {spelled(first, last)} holds anchor #{anchors[0].id} ({anchors[0].name}); anchors cannot be "
            "retracted: name the entries on either side of it"
        )
    ids = [entry.id for entry in asked if reaches_requests(entry)]
    if not ids:
        raise RetractionError(f"Range {spelled(first, last)} holds no {', '.join(RETRACTABLE)} entry to retract")
    return ids


def retraction(
    store: TapeStore, tape: str, target: Target, *, reason: str | None = None, undo: bool = False
) -> TapeEntry:
    """The ``retract`` (or, with ``undo``, ``unretract``) event for ``target``, checked against the tape.

    Nothing is written here: the caller appends the event. Refused with a :class:`RetractionError` (or an
    ``EntryNotFoundError`` for an id the tape does not hold): a backwards range, an anchor, an entry that
    never reaches a view, entries already retracted (or, to unretract, not retracted).
    """
    if reason is not None and not isinstance(reason, str):
        raise RetractionError(f"A retraction's reason is text, got {reason!r}")
    first, last = parse_span(target)
    last_id = store.stats(tape).last_id
    if last > last_id:
        raise EntryNotFoundError(f"Entry #{last} is not on tape {tape!r} (last id {last_id})")
    # Retract events always follow what they retract, so the tail from just before ``first`` holds them all.
    entries = store.read(tape, max(1, first - LOOK_BACK))
    ids = chosen_ids(entries, first, last)
    retracted = retracted_ids(entries)
    groups = pair_groups(entries)
    if undo:
        ids = [i for i in ids if i in retracted]
        if not ids:
            what = f"Entry {spelled(first, last)} is not" if first == last else f"No entry of {spelled(first, last)} is"
            raise RetractionError(f"{what} retracted, so there is nothing to unretract")
    else:
        already = [i for i in ids if i in retracted]
        if already:
            shown = ", ".join(f"#{i}" for i in already[:5])
            verb = "is" if len(already) == 1 else "are"
            raise RetractionError(f"Entry {shown} {verb} already retracted; unretract brings it back")
    taken = sorted({member for i in ids for member in groups.get(i, {i})})
    if undo:
        taken = [i for i in taken if i in retracted]
    data = {"ids": id_ranges(taken), "asked": spelled(first, last), "reason": reason}
    return TapeEntry.event(UNRETRACT if undo else RETRACT, data)
