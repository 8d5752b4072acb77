"""Harbor's Agent Trajectory Interchange Format (ATIF, ``ATIF-v1.0`` to ``v1.6``) as tape entries.

A trajectory is one JSON document; each of its ``steps`` is a record. A ``system`` step is the system
prompt, a ``user`` step the user's message, an ``agent`` step one model call: its message, its
``tool_calls``, the ``observation`` holding their results, and ``metrics`` with the call's tokens.
ATIF's extension point is ``extra``: a step whose ``extra.bub`` names an anchor (``{"anchor": {"name",
"state"}}``, or ``{"kind": "anchor", "name", "state"}``) becomes that anchor, which is how a tape's
anchors travel through ATIF and back.
"""

from __future__ import annotations

from typing import Any, Final

from bub_nb.imports.draft import RECORD_EVENT_PREFIX, TapeDraft, mapping, openai_usage
from bub_nb.imports.responses import message_content

FORMAT: Final = "atif"
SOURCES: Final = ("system", "user", "agent")


def looks_like(document: Any) -> bool:
    """Whether a decoded JSON document is an ATIF trajectory."""
    return (
        isinstance(document, dict)
        and str(document.get("schema_version", "")).startswith("ATIF-")
        and isinstance(document.get("steps"), list)
    )


def read(document: dict[str, Any], draft: TapeDraft) -> dict[str, Any]:
    """Add every step to ``draft``; returns what the trajectory says of its session."""
    agent = mapping(document.get("agent"))
    session = {
        "session": document.get("session_id"),
        "schema_version": document.get("schema_version"),
        "agent": agent,
    }
    for key in ("notes", "final_metrics", "extra"):
        if document.get(key) is not None:
            session[key] = document[key]
    for step in document["steps"]:
        if not isinstance(step, dict):
            draft.take(step, type(step).__name__)
            draft.keep("the step is not a JSON object")
            continue
        source = step.get("source")
        draft.take(step, f"step/{source}", step.get("timestamp"))
        if source not in SOURCES or not _add(draft, step, agent.get("model_name")):
            draft.keep(f"ATIF step source {source!r} is not system, user or agent")
    return session


def anchor_of(step: dict[str, Any]) -> dict[str, Any] | None:
    """The anchor a step's ``extra`` names under Bub's namespace, as ``{"name", "state"}``; else ``None``.

    Read as ``extra.bub.anchor``, ``extra.bub`` with ``kind: anchor``, ``extra["bub.anchor"]``, or the
    flat ``extra["bub.anchor.name"]`` and ``extra["bub.anchor.state"]``.
    """
    extra = mapping(step.get("extra"))
    bub = mapping(extra.get("bub"))
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


def _add(draft: TapeDraft, step: dict[str, Any], default_model: Any) -> bool:
    meta: dict[str, Any] = {"step_id": step.get("step_id")}
    if isinstance(step.get("extra"), dict):
        meta["extra"] = step["extra"]
    anchor = anchor_of(step)
    if anchor is not None:
        state = anchor["state"]
        draft.anchor(anchor["name"], state if isinstance(state, dict) else None, **meta)
        return True
    source = step["source"]
    text = message_content(step.get("message"))
    if source == "system":
        draft.system(text if isinstance(text, str) else str(text), **meta)
        _observe(draft, step)
        return True
    if source == "user":
        draft.message({"role": "user", "content": text}, **meta)
        return True
    meta["run_id"] = f"step-{step.get('step_id')}"
    if isinstance(step.get("reasoning_content"), str):
        meta["reasoning"] = step["reasoning_content"]
    calls = [c for c in step.get("tool_calls") or () if isinstance(c, dict)]
    for index, call in enumerate(calls):
        draft.call(
            str(call.get("tool_call_id")), str(call.get("function_name")), call.get("arguments"),
            text=text if index == 0 and isinstance(text, str) else "", **(meta if index == 0 else {}),
        )  # fmt: skip
    if not calls:
        draft.message({"role": "assistant", "content": text}, **meta)
    _observe(draft, step)
    metrics = step.get("metrics") if isinstance(step.get("metrics"), dict) else None
    model = step.get("model_name") or default_model
    if metrics is not None:
        usage = openai_usage(
            metrics.get("prompt_tokens"), metrics.get("completion_tokens"), None, metrics.get("cached_tokens")
        )
        extra = {"cost_usd": metrics["cost_usd"]} if isinstance(metrics.get("cost_usd"), int | float) else {}
        draft.run(usage, model, run_id=meta["run_id"], source_usage=metrics, **extra)
    return True


def _observe(draft: TapeDraft, step: dict[str, Any]) -> None:
    """The observation's results: each answers its ``source_call_id``.

    Producers often leave ``source_call_id`` out; a result without one then answers the step's call at its
    own position, if that call is still unanswered. A result that answers no call is an event.
    """
    observation = step.get("observation")
    results = observation.get("results") if isinstance(observation, dict) else None
    calls = [c.get("tool_call_id") for c in step.get("tool_calls") or () if isinstance(c, dict)]
    named = {r.get("source_call_id") for r in results or () if isinstance(r, dict)}
    for position, result in enumerate(results if isinstance(results, list) else ()):
        if not isinstance(result, dict):
            continue
        call_id = result.get("source_call_id")
        if not call_id and position < len(calls) and calls[position] not in named:
            call_id = calls[position]
        content = message_content(result.get("content"))
        if isinstance(call_id, str) and call_id:
            draft.result(call_id, content)
        else:
            draft.event(RECORD_EVENT_PREFIX + "observation", result)
