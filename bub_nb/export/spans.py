"""A tape as OpenTelemetry GenAI spans: a trace per turn, ``invoke_agent`` over ``chat`` and ``execute_tool`` spans.

A pure projection: the same tape gives the same spans, ids and times, so exporting twice changes nothing.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import replace
from typing import Any

from bub_nb.export import genai as g
from bub_nb.export.calls import TurnCalls, read_entry
from bub_nb.export.marks import mark_event, summarized_anchors
from bub_nb.export.records import AttributeValue, SpanProjection, SpanRecord
from bub_nb.export.turns import TapeTurn, split_turns
from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.events import run_view


def tape_spans(
    tape: str,
    entries: Iterable[TapeEntry],
    *,
    content: bool = False,
    provider: str | None = None,
    run_ids: Collection[str] | None = None,
    summarized: Collection[int] = (),
) -> SpanProjection:
    """The spans of every closed turn of ``entries``; with ``run_ids`` only of the turns with those run ids.

    ``content`` adds the messages, tool arguments and results (the conventions' opt-in); ``provider``
    replaces the ``gen_ai.provider.name`` read from the model. ``summarized`` names anchors a summarizing
    handoff wrote before ``entries`` begin (those within them are found).
    """
    entries = list(entries)
    split = split_turns(entries)
    summarized = summarized_anchors(entries) | frozenset(summarized)
    spans: list[SpanRecord] = []
    turns = 0
    for turn in split.turns:
        if run_ids is not None and turn.run_id not in run_ids:
            continue
        turns += 1
        spans.extend(turn_spans(tape, turn, summarized, content=content, provider=provider))
    return SpanProjection(tuple(spans), turns, len(split.pending))


_USAGE_NAMES: tuple[tuple[str, tuple[tuple[str, ...], ...]], ...] = (
    (g.INPUT_TOKENS, (("prompt_tokens",), ("input_tokens",))),
    (g.OUTPUT_TOKENS, (("completion_tokens",), ("output_tokens",))),
    (
        g.CACHE_READ_TOKENS,
        (
            ("prompt_tokens_details", "cached_tokens"),
            ("input_tokens_details", "cached_tokens"),
            ("cached_tokens",),
            ("cache_read_input_tokens",),
            ("cached_input_tokens",),
        ),
    ),
    (
        g.CACHE_CREATION_TOKENS,
        (
            ("prompt_tokens_details", "cache_creation_tokens"),
            ("prompt_tokens_details", "cache_write_tokens"),
            ("cache_creation_input_tokens",),
        ),
    ),
    (
        g.REASONING_TOKENS,
        (
            ("completion_tokens_details", "reasoning_tokens"),
            ("output_tokens_details", "reasoning_tokens"),
            ("reasoning_tokens",),
            ("reasoning_output_tokens",),
        ),
    ),
)
"""Each GenAI usage attribute and where a ``run`` event's usage may hold it: OpenAI's chat-completions and
responses names, then the names of the logs an import keeps in ``source_usage`` (Anthropic's, Codex's)."""


def usage_attributes(usage: Any, source: Any = None) -> dict[str, AttributeValue]:
    """The GenAI usage attributes of a ``run`` event's ``usage``; a count it lacks is read from ``source``,
    the usage as an imported log wrote it (cache writes are only there for Claude Code)."""
    found: dict[str, AttributeValue] = {}
    for attribute, paths in _USAGE_NAMES:
        for where in (usage, source) if attribute not in (g.INPUT_TOKENS, g.OUTPUT_TOKENS) else (usage,):
            value = next((count for path in paths if (count := _count_at(where, path)) is not None), None)
            if value is not None:
                found[attribute] = value
                break
    return found


def _count_at(usage: Any, path: tuple[str, ...]) -> int | None:
    value = usage
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value if type(value) is int else None


def turn_spans(
    tape: str, turn: TapeTurn, summarized: Collection[int] = (), *, content: bool = False, provider: str | None = None
) -> list[SpanRecord]:
    """One turn's spans: the ``invoke_agent`` span first, then its ``chat`` and ``execute_tool`` spans."""
    data = turn.data
    found_provider, model = g.provider_and_model(str(data.get("model") or ""))
    first = turn.entries[0]
    view = run_view(turn.run)
    start = next((t for t in (g.nanos(e.date, -1) for e in turn.entries) if t >= 0), 0)
    state = TurnCalls(
        tape,
        turn,
        frozenset(summarized),
        content,
        provider or found_provider,
        model,
        g.trace_id(tape, first.id),
        g.span_id(tape, first.id, g.INVOKE_AGENT),
        start,
        first.id,
        view.anchor if view is not None else None,
        view is not None and view.anchor in summarized,
    )
    events = [mark_event(entry, summarized, content, start) for entry in turn.marks]
    for entry in turn.entries[:-1]:
        read_entry(state, entry, events)
    if state.failed is not None:
        kind = str(state.failed.payload.get("kind"))
        if kind != "interrupted":  # an interrupt with no partial answer stopped no model call
            state.chat(state.failed, "error", None, kind)
    state.close_tools()
    status = str(data.get("status") or "")
    error = None if status in ("ok", "command", "") else status
    attributes: dict[str, AttributeValue] = {
        g.OPERATION: g.INVOKE_AGENT,
        g.PROVIDER: state.provider,
        g.AGENT_NAME: g.AGENT,
        g.CONVERSATION: tape,
        g.REQUEST_MODEL: model,
        "bub.run.status": status,
        "bub.entry.first": first.id,
        "bub.entry.last": turn.run.id,
    }
    if error is None:
        attributes[g.RESPONSE_MODEL] = model
    else:
        attributes[g.ERROR_TYPE] = _error_kind(turn) or error
    for key, value in (("bub.run.id", turn.run_id), ("bub.run.steps", data.get("steps"))):
        if isinstance(value, str | int):
            attributes[key] = value
    if isinstance(data.get("elapsed_ms"), int | float):
        attributes["bub.run.elapsed_ms"] = float(data["elapsed_ms"])
    if view is not None:
        attributes["bub.view.mode"] = view.mode
        attributes["bub.view.entries"] = len(view.entry_ids)
        attributes["bub.view.system_tokens"] = view.system_tokens
        if view.anchor is not None:
            attributes["bub.view.anchor"] = view.anchor
        if view.memory_version is not None:
            attributes["bub.memory.version"] = view.memory_version
        if state.compacted:
            attributes[g.COMPACTED] = True
    usage = usage_attributes(data.get("usage"), data.get("source_usage"))
    for key, value in usage.items():
        attributes[key.replace("gen_ai.usage.", "bub.run.usage.")] = value
    children = _with_usage(state.spans, usage, data.get("steps"))
    if usage and children is state.spans:  # no model call answered: the usage can only sit on the turn
        attributes.update(usage)
    root = SpanRecord(
        state.trace,
        state.root,
        None,
        f"{g.INVOKE_AGENT} {g.AGENT}",
        "internal",
        start,
        max(start, g.nanos(turn.run.date, start)),
        attributes,
        tuple(events),
        error,
    )
    return [root, *children]


def _with_usage(spans: list[SpanRecord], usage: dict[str, AttributeValue], calls: Any) -> list[SpanRecord]:
    """The spans with the turn's usage on its last answered ``chat`` span (the last one when none answered).

    The tape keeps one usage per turn, not per model call: it goes on the call that ended the turn (marked
    with how many calls it sums), so every sum over chat spans, a session's or a trace's, counts it once.
    """
    chats = [i for i, span in enumerate(spans) if span.attributes.get(g.OPERATION) == g.CHAT]
    answered = [i for i in chats if spans[i].error is None]
    if not usage or not chats:
        return spans
    last = (answered or chats)[-1]
    attributes = {**spans[last].attributes, **usage}
    if isinstance(calls, int) and calls > 1:
        attributes["bub.usage.model_calls"] = calls
    return [*spans[:last], replace(spans[last], attributes=attributes), *spans[last + 1 :]]


def _error_kind(turn: TapeTurn) -> str | None:
    """The kind of the turn's last ``error`` entry that is not a tool's."""
    for entry in reversed(turn.entries):
        kind = entry.payload.get("kind") if entry.kind == "error" else None
        if isinstance(kind, str) and not kind.startswith("tool."):
            return kind
    return None
