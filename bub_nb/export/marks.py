"""Anchors, handoffs and summaries as span events, and which anchors a summarizing handoff wrote."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from bub_nb.export import genai as g
from bub_nb.export.messages import mapping, to_json
from bub_nb.export.records import AttributeValue, SpanEvent
from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.events import SUMMARY


def summarized_anchors(entries: Iterable[TapeEntry]) -> frozenset[int]:
    """The ids of the anchors a summarizing handoff wrote: each follows a ``summary`` event naming it."""
    found: set[int] = set()
    summary_for: str | None = None
    for entry in entries:
        if entry.kind == "event" and entry.payload.get("name") == SUMMARY:
            data = entry.payload.get("data")
            summary_for = data.get("anchor") if isinstance(data, Mapping) else None
        elif entry.kind == "anchor":
            if summary_for is not None and entry.payload.get("name") == summary_for:
                found.add(entry.id)
            summary_for = None
    return frozenset(found)


def mark_event(entry: TapeEntry, summarized: Collection[int], content: bool, fallback: int = 0) -> SpanEvent:
    """``bub.anchor``, ``bub.handoff`` or ``bub.summary``; a summarizing handoff marks the conversation compacted.

    ``fallback`` is the event's time when the entry's date is not one. An anchor's state is content (a
    summary of the conversation): its JSON is kept only with ``content``, its keys always.
    """
    payload = entry.payload
    attributes: dict[str, AttributeValue] = {"bub.entry.id": entry.id}
    if entry.kind == "anchor":
        name = "bub.anchor"
        attributes["bub.anchor.name"] = str(payload.get("name", ""))
        attributes["bub.anchor.summarized"] = entry.id in summarized
        state = payload.get("state")
        if isinstance(state, Mapping):
            attributes["bub.anchor.state_keys"] = tuple(str(key) for key in state)
            if content:
                attributes["bub.anchor.state"] = to_json(state)
    else:
        data = mapping(payload.get("data"))
        name = f"bub.{payload.get('name')}"
        attributes["bub.anchor.name"] = str(data.get("name") or data.get("anchor") or "")
        if payload.get("name") == SUMMARY:
            attributes["bub.summary.model"] = str(data.get("model", ""))
            if type(data.get("parts")) is int:
                attributes["bub.summary.parts"] = data["parts"]
            usage = mapping(data.get("usage"))
            for key, attribute in (("prompt_tokens", "input_tokens"), ("completion_tokens", "output_tokens")):
                if type(usage.get(key)) is int:
                    attributes[f"bub.summary.{attribute}"] = usage[key]
        elif entry.id - 1 in summarized:  # the handoff event follows its anchor
            attributes[g.COMPACTED] = True
    return SpanEvent(name, g.nanos(entry.date, fallback), attributes)
