"""Harbor's Agent Trajectory Interchange Format (ATIF, any ``ATIF-v1.x``) as tape entries.

A trajectory is one JSON document; each of its ``steps`` is a record. A ``system`` step is the system
prompt, a ``user`` step the user's message, an ``agent`` step one model call: its message, its
``tool_calls``, the ``observation`` holding their results, and ``metrics`` with the call's tokens.
ATIF's extension point is ``extra``: what bub_nb's own export keeps there (anchors, events, errors, runs, see
``atif_extension``) comes back as those entries, so a tape travels through ATIF and back.
"""

from __future__ import annotations

from typing import Any, Final

from bub_nb.imports.atif_extension import add_bub_step, add_closing_run, extension, restored_meta, result_value
from bub_nb.imports.draft import RECORD_EVENT_PREFIX, TapeDraft
from bub_nb.imports.responses import message_content
from bub_nb.imports.values import mapping, openai_usage
from bub_nb.tape.entries import ROLES
from bub_nb.tape.events import RUN

FORMAT: Final = "atif"
COPIED_CONTEXT: Final = "copied_context"
"""The meta key of an entry from a step marked ``is_copied_context``; the export marks such entries so again."""
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


def _add(draft: TapeDraft, step: dict[str, Any], default_model: Any) -> bool:
    bub = extension(step)
    meta: dict[str, Any] = {"step_id": step.get("step_id"), **restored_meta(bub)}
    if not bub and isinstance(step.get("extra"), dict):
        meta["extra"] = step["extra"]
    if step.get("is_copied_context") is True:  # context carried over from an earlier trajectory, not done here
        meta[COPIED_CONTEXT] = True
    if add_bub_step(draft, step, meta):
        add_closing_run(draft, step, meta)
        return True
    source = step["source"]
    text = message_content(step.get("message"))
    if source == "system":
        role = bub.get("role")
        if isinstance(role, str) and role in ROLES and role != "system":
            draft.message({"role": role, "content": text}, **meta)
        else:
            draft.system(text if isinstance(text, str) else str(text), **meta)
        _observe(draft, step)
        add_closing_run(draft, step, meta)
        return True
    if source == "user":
        draft.message({"role": "user", "content": text}, **meta)
        add_closing_run(draft, step, meta)
        return True
    meta.setdefault("run_id", f"step-{step.get('step_id')}")
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
    _run(draft, step, bub, default_model, meta["run_id"])
    return True


def _run(draft: TapeDraft, step: dict[str, Any], bub: dict[str, Any], default_model: Any, run_id: str) -> None:
    """The step's ``run`` event: the one bub_nb exported, as it was, else one made of the step's metrics."""
    exported = bub.get("run")
    if isinstance(exported, dict):
        draft.event(RUN, exported, run_id=run_id)
        return
    metrics = step.get("metrics") if isinstance(step.get("metrics"), dict) else None
    if metrics is None:
        return
    usage = openai_usage(
        metrics.get("prompt_tokens"), metrics.get("completion_tokens"), None, metrics.get("cached_tokens")
    )
    extra = {"cost_usd": metrics["cost_usd"]} if isinstance(metrics.get("cost_usd"), int | float) else {}
    draft.run(usage, step.get("model_name") or default_model, run_id=run_id, source_usage=metrics, **extra)


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
            draft.result(call_id, result_value(result, content))
        else:
            draft.event(RECORD_EVENT_PREFIX + "observation", result)
