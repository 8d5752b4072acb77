"""Bub's own facts in an ATIF trajectory (``extra.bub``, as bub_nb's ATIF export writes them), read back as entries.

A step's ``extra.bub`` may name an anchor (``anchor: {name, state}``, with the ``handoff`` that recorded it), an
event (``event: {name, data}``), a summary's model calls (``summary``), an ``error``, any other ``entry: {kind,
payload}``, the ``role`` of a message that was neither the user's nor the assistant's, the turn's ``run`` event
(on the turn's last step: its last model call's, else whatever step ended it, as a failed turn's error), and the
entry's ``meta``. Other spellings of an anchor are read too: ``extra.bub`` with ``kind: "anchor"``,
``extra["bub.anchor"]``, or ``extra["bub.anchor.name"]`` with ``extra["bub.anchor.state"]``.
"""

from __future__ import annotations

from typing import Any, Final

from bub_nb.imports.draft import TapeDraft
from bub_nb.imports.values import mapping
from bub_nb.tape.entries import KINDS
from bub_nb.tape.events import HANDOFF, RUN, SUMMARY

EXTENSION: Final = "bub"
KEPT_META: Final = ("run_id", "context", "cell", "partial", "retry", "source_meta")
"""The keys of an entry's original ``meta`` an import restores beside its own (``source`` and ``records``)."""


def extension(step: dict[str, Any]) -> dict[str, Any]:
    """The step's ``extra.bub``, or an empty object."""
    return mapping(mapping(step.get("extra")).get(EXTENSION))


def anchor_of(step: dict[str, Any]) -> dict[str, Any] | None:
    """The anchor a step names under Bub's namespace, as ``{"name", "state"}``; else ``None``."""
    extra = mapping(step.get("extra"))
    bub = mapping(extra.get(EXTENSION))
    candidates = [
        mapping(bub.get("anchor")),
        bub if bub.get("kind") == "anchor" else {},
        mapping(extra.get("bub.anchor")),
        {"name": extra.get("bub.anchor.name"), "state": extra.get("bub.anchor.state")},
    ]
    for anchor in candidates:
        if isinstance(anchor.get("name"), str) and anchor["name"]:
            return {"name": anchor["name"], "state": anchor.get("state")}
    return None


def restored_meta(bub: dict[str, Any]) -> dict[str, Any]:
    """What the entry's own ``meta`` held that a view or a frame reads (its run, whether the model saw it)."""
    original = mapping(bub.get("meta"))
    return {key: original[key] for key in KEPT_META if key in original}


def add_bub_step(draft: TapeDraft, step: dict[str, Any], meta: dict[str, Any]) -> bool:
    """Add a step that stands for a Bub entry other than a message or a call; ``False`` when it is none."""
    bub = extension(step)
    anchor = anchor_of(step)
    if anchor is not None:
        state = anchor["state"]
        draft.anchor(anchor["name"], state if isinstance(state, dict) else None, **meta)
        if isinstance(bub.get("handoff"), dict):
            draft.event(HANDOFF, bub["handoff"], **meta)
        return True
    event = mapping(bub.get("event"))
    if isinstance(event.get("name"), str):
        draft.event(event["name"], event.get("data"), **meta)
        return True
    if "summary" in bub:
        draft.event(SUMMARY, bub["summary"], **meta)
        return True
    error = mapping(bub.get("error"))
    if step.get("source") == "system" and isinstance(error.get("kind"), str):
        draft.entry("error", error, **meta)
        return True
    entry = mapping(bub.get("entry"))
    if entry.get("kind") in KINDS and isinstance(entry.get("payload"), dict):
        draft.entry(str(entry["kind"]), entry["payload"], **meta)
        return True
    return step.get("source") == "system" and isinstance(bub.get("run"), dict)  # a run alone: add_closing_run


def add_closing_run(draft: TapeDraft, step: dict[str, Any], meta: dict[str, Any]) -> None:
    """The ``run`` event bub_nb's export put on a step other than a model call's: a turn that failed before the
    model answered ends on its error step (or its prompt), which carries the run beside what it stands for."""
    run = extension(step).get("run")
    if step.get("source") != "agent" and isinstance(run, dict):
        draft.event(RUN, run, **meta)


def result_value(result: dict[str, Any], content: Any) -> Any:
    """An observation result as a tool result: an error bub_nb exported (``extra.bub.error``) becomes one again."""
    kind = mapping(mapping(result.get("extra")).get(EXTENSION)).get("error")
    return {"kind": kind, "message": content} if isinstance(kind, str) else content
