"""Entries copied onto a fork, renumbered: the ids their summaries cite and their turns recorded follow them."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from bub_nb.tape.citations import CITATION, CITING_KEYS, format_citation
from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.events import HANDOFF, RETRACT, RUN, SUMMARY, UNRETRACT, id_ranges, range_ids
from bub_nb.tape.names import entry_address


def renumber(entries: Sequence[TapeEntry], ids: Mapping[int, int], parent: str) -> list[TapeEntry]:
    """``entries`` with every id they name moved to its new id in ``ids`` (old id -> new id).

    A citation of an entry that was not copied becomes the parent's ``tape://`` address, so it still names
    what it named. A run whose recorded view reaches an entry that was not copied keeps no view: its
    request cannot be rebuilt on the fork, and says so, instead of being rebuilt from other entries.
    """
    return [_renumbered(entry, ids, parent) for entry in entries]


def _renumbered(entry: TapeEntry, ids: Mapping[int, int], parent: str) -> TapeEntry:
    payload = entry.payload
    if entry.kind == "anchor" and isinstance(payload.get("state"), dict):
        payload = {**payload, "state": _state(payload["state"], ids, parent)}
    elif entry.kind == "event" and entry.name == HANDOFF and isinstance(payload.get("data"), dict):
        data = payload["data"]
        if isinstance(data.get("state"), dict):
            payload = {**payload, "data": {**data, "state": _state(data["state"], ids, parent)}}
    elif entry.kind == "event" and entry.name == RUN and isinstance(payload.get("data"), dict):
        data = payload["data"]
        if isinstance(data.get("view"), dict):
            payload = {**payload, "data": {**data, "view": _view(data["view"], ids)}}
    elif entry.kind == "event" and entry.name in (RETRACT, UNRETRACT) and isinstance(payload.get("data"), dict):
        data = payload["data"]  # the entries it takes back, on the fork; those not copied are not there to take
        taken = range_ids(data.get("ids")) or ()
        payload = {**payload, "data": {**data, "ids": id_ranges(ids[i] for i in taken if i in ids)}}
    elif entry.kind == "event" and entry.name == SUMMARY and isinstance(payload.get("data"), dict):
        data = payload["data"]
        if isinstance(data.get("range"), list):
            payload = {**payload, "data": {**data, "range": _range(data["range"], ids)}}
    if payload is entry.payload:
        return entry
    return TapeEntry(entry.id, entry.kind, payload, entry.meta, entry.date)


def renumber_text(text: str, ids: Mapping[int, int], parent: str) -> str:
    """``text`` with each ``[#id]`` citation naming the entry's new id, or the parent's address when not copied."""

    def cite(match: re.Match[str]) -> str:
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) else first
        old = range(first, last + 1)
        if all(i in ids for i in old):
            new = [ids[i] for i in old]
            if new == list(range(new[0], new[0] + len(new))):
                return format_citation(new[0], new[-1])
            return " ".join(format_citation(i) for i in new)
        return " ".join(f"[#{ids[i]}]" if i in ids else f"[{entry_address(parent, i)}]" for i in old)

    return CITATION.sub(cite, text)


def _state(state: dict[str, Any], ids: Mapping[int, int], parent: str) -> dict[str, Any]:
    moved = dict(state)
    for key in CITING_KEYS:
        if isinstance(moved.get(key), str):
            moved[key] = renumber_text(moved[key], ids, parent)
    sources = moved.get("sources")
    if isinstance(sources, list) and all(type(i) is int for i in sources):
        moved["sources"] = [ids[i] for i in sources if i in ids]
    if isinstance(moved.get("range"), list):
        moved["range"] = _range(moved["range"], ids)
    return moved


def _range(pair: list[Any], ids: Mapping[int, int]) -> list[Any] | None:
    if len(pair) == 2 and all(type(i) is int and i in ids for i in pair):
        return [ids[pair[0]], ids[pair[1]]]
    return None


def _view(view: dict[str, Any], ids: Mapping[int, int]) -> dict[str, Any] | None:
    entries = range_ids(view.get("entries"))
    anchor = view.get("anchor")
    if entries is None or any(i not in ids for i in entries) or (type(anchor) is int and anchor not in ids):
        return None
    return {
        **view,
        "entries": id_ranges(ids[i] for i in entries),
        "anchor": ids[anchor] if type(anchor) is int else anchor,
    }
