"""A tape as an ATIF trajectory (Harbor's Agent Trajectory Interchange Format), Bub's facts kept as extensions.

Steps follow the tape: a ``system`` entry is a system step, a user message a user step, a ``tool_call`` entry
an agent step whose observation is the ``tool_result`` after it, an assistant message an agent step. Anchors,
handoffs, summaries, errors and other events are system steps with an empty message whose ``extra.bub`` holds
the entry. Every step's ``extra.bub.entries`` names the entries it comes from; a turn's ``run`` event lands on
its last step (the token usage on its last agent step's ``metrics``). A step holding retracted entries keeps them
and lists them in ``extra.bub.retracted``. An imported tape's ``import.source`` event is no step: the root's
``extra.bub.imported`` holds it, so a trajectory imported and exported again has the steps it had. A step of
entries a forked session copied (or an import marked so) is ``is_copied_context``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final

from bub_nb.export import genai as g
from bub_nb.export.messages import mapping, text_of, to_json, tool_arguments
from bub_nb.export.spans import usage_attributes
from bub_nb.imports.atif import COPIED_CONTEXT
from bub_nb.imports.draft import SOURCE as IMPORT_SOURCE
from bub_nb.tape.entries import TapeEntry, plain_json
from bub_nb.tape.events import HANDOFF, RUN, SUMMARY, retracted_ids
from bub_nb.tape.stores.columns import FORKED_FROM

if TYPE_CHECKING:
    from bub_nb.tape import Tape

ATIF_VERSION: Final = "ATIF-v1.8"
"""The ATIF schema version written (Harbor's RFC 0001, as its ``harbor`` 0.26 models validate it)."""

EXTENSION: Final = "bub"
EXTENSION_VERSION: Final = 1
"""The version of what ``extra.bub`` holds, raised when its shape changes."""


def atif(tape: Tape, *, agent_name: str = "bub_nb") -> dict[str, Any]:
    """``tape`` as an ATIF trajectory: a JSON-ready dict (``json.dumps`` it, or validate it with Harbor's models)."""
    return trajectory(tape.name, tape.read(), agent_name=agent_name)


def trajectory(name: str, entries: Iterable[TapeEntry], *, agent_name: str = "bub_nb") -> dict[str, Any]:
    """The trajectory of ``entries`` (in tape order) of the tape ``name``."""
    steps = _Steps()
    entries = list(entries)
    imported: list[dict[str, Any]] = []
    for entry in entries:
        if entry.kind == "event" and entry.payload.get("name") == IMPORT_SOURCE:
            # where an imported tape came from describes the trajectory, not a step of it: a round trip adds none
            imported.append({"entry": entry.id, "data": plain_json(entry.payload.get("data"))})
            continue
        steps.add(entry)
    retracted = retracted_ids(entries)
    for step in steps.steps if retracted else ():  # kept, as on the tape, and marked: no later view sends them
        bub = step["extra"][EXTENSION]
        taken_back = sorted(retracted.intersection(bub["entries"]))
        if taken_back:
            bub["retracted"] = taken_back
    if not steps.steps:  # ATIF wants at least one step; an empty tape says so in one
        steps.system(None, "", {"empty": True})
    totals = steps.totals
    final: dict[str, Any] = {
        "total_prompt_tokens": totals.get(g.INPUT_TOKENS, 0),
        "total_completion_tokens": totals.get(g.OUTPUT_TOKENS, 0),
        "total_steps": len(steps.steps),
        "extra": {EXTENSION: {"turns": steps.turns}},
    }
    if g.CACHE_READ_TOKENS in totals:
        final["total_cached_tokens"] = totals[g.CACHE_READ_TOKENS]
    for key, attribute in (
        ("total_reasoning_tokens", g.REASONING_TOKENS),
        ("total_cache_creation_tokens", g.CACHE_CREATION_TOKENS),
    ):
        if attribute in totals:
            final["extra"][EXTENSION][key] = totals[attribute]
    entry_count = steps.entries + len(imported)
    root: dict[str, Any] = {"extension_version": EXTENSION_VERSION, "tape": name, "entries": entry_count}
    if imported:
        root["imported"] = imported
    agent: dict[str, Any] = {"name": agent_name, "version": g.producer_version()}
    if steps.models:
        agent["model_name"] = max(steps.models, key=steps.models.__getitem__)
    return {
        "schema_version": ATIF_VERSION,
        "session_id": name,
        "agent": agent,
        "steps": [{"step_id": number, **step} for number, step in enumerate(steps.steps, 1)],
        "final_metrics": final,
        "extra": {EXTENSION: root},
    }


class _Steps:
    """The steps so far, and what the next entries attach to."""

    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []
        self.turn_start = 0
        self.turns = 0
        self.entries = 0
        self.totals: dict[str, int] = {}
        self.models: dict[str, int] = {}
        self.open_tools: dict[str, Any] | None = None

    def step(self, entry: TapeEntry | None, source: str, message: str, bub: dict[str, Any] | None = None) -> None:
        extra: dict[str, Any] = {"entries": [entry.id] if entry is not None else []}
        if entry is not None and entry.meta:
            extra["meta"] = plain_json(entry.meta)
        extra.update(bub or {})
        step: dict[str, Any] = {"source": source, "message": message, "extra": {EXTENSION: extra}}
        if entry is not None and g.parse_date(entry.date) is not None:
            step["timestamp"] = entry.date
        if entry is not None and (entry.meta.get(COPIED_CONTEXT) is True or FORKED_FROM in entry.meta):
            step["is_copied_context"] = True  # imported as copied, or copied from the tape a session forked from
        self.steps.append(step)

    def system(self, entry: TapeEntry | None, message: str, bub: dict[str, Any]) -> None:
        self.step(entry, "system", message, bub)

    def add(self, entry: TapeEntry) -> None:
        self.entries += 1
        kind, payload = entry.kind, entry.payload
        if kind != "tool_result":
            self.open_tools = None
        if kind == "system":
            self.system(entry, text_of(payload.get("content")), {})
        elif kind == "message":
            role = payload.get("role")
            source = {"user": "user", "assistant": "agent"}.get(str(role), "system")
            self.step(entry, source, text_of(payload.get("content")), {} if source != "system" else {"role": role})
        elif kind == "tool_call":
            self.tool_call(entry)
        elif kind == "tool_result" and self.open_tools is not None:
            self.tool_result(entry)
        elif kind == "anchor":
            self.system(entry, "", {"anchor": {"name": payload.get("name"), "state": plain_json(payload.get("state"))}})
        elif kind == "event" and payload.get("name") == RUN:
            self.run(entry)
        elif kind == "event" and payload.get("name") == HANDOFF and self._joins_anchor(entry):
            self.steps[-1]["extra"][EXTENSION]["handoff"] = plain_json(payload.get("data"))
            self.steps[-1]["extra"][EXTENSION]["entries"].append(entry.id)
        elif kind == "event":
            name = payload.get("name")
            bub = {"event": {"name": name, "data": plain_json(payload.get("data"))}}
            self.system(entry, "", bub if name != SUMMARY else {"summary": plain_json(payload.get("data"))})
        elif kind == "error":
            self.system(entry, "", {"error": plain_json(payload)})
        else:  # a tool_result with no call before it, or a kind this version does not know
            self.system(entry, "", {"entry": {"kind": kind, "payload": plain_json(payload)}})

    def _joins_anchor(self, entry: TapeEntry) -> bool:
        last = self.steps[-1]["extra"][EXTENSION] if self.steps else {}
        anchor = last.get("anchor")
        data = mapping(entry.payload.get("data"))
        return anchor is not None and "handoff" not in last and anchor.get("name") == data.get("name")

    def tool_call(self, entry: TapeEntry) -> None:
        calls = [mapping(call) for call in entry.payload.get("calls") or []]
        tool_calls = []
        for index, call in enumerate(calls):
            function = mapping(call.get("function"))
            arguments = tool_arguments(function.get("arguments"))
            tool_calls.append(
                {
                    "tool_call_id": str(call.get("id") or f"call-{entry.id}-{index}"),
                    "function_name": str(function.get("name", "")),
                    "arguments": plain_json(arguments) if isinstance(arguments, Mapping) else {"_raw": arguments},
                }
            )
        self.step(entry, "agent", text_of(entry.payload.get("content")))
        step = self.steps[-1]
        if tool_calls:
            step["tool_calls"] = tool_calls
        self.open_tools = step

    def tool_result(self, entry: TapeEntry) -> None:
        assert self.open_tools is not None
        step, self.open_tools = self.open_tools, None
        calls = step.get("tool_calls") or []
        results = []
        for index, result in enumerate(entry.payload.get("results") or []):
            found: dict[str, Any] = {"content": result if isinstance(result, str) else to_json(result)}
            if index < len(calls):
                found["source_call_id"] = calls[index]["tool_call_id"]
            if isinstance(result, Mapping) and "kind" in result and "message" in result:
                found["content"] = str(result["message"])
                found["extra"] = {EXTENSION: {"error": str(result["kind"])}}
            results.append(found)
        step["observation"] = {"results": results}
        step["extra"][EXTENSION]["entries"].append(entry.id)

    def run(self, entry: TapeEntry) -> None:
        data = mapping(entry.payload.get("data"))
        self.turns += 1
        turn = self.steps[self.turn_start :]
        self.turn_start = len(self.steps)
        model = data.get("model")
        if isinstance(model, str) and model:
            self.models[model] = self.models.get(model, 0) + 1
        usage = usage_attributes(data.get("usage"), data.get("source_usage"))
        for key, value in usage.items():
            if isinstance(value, int):
                self.totals[key] = self.totals.get(key, 0) + value
        agent_steps = [step for step in turn if step["source"] == "agent"]
        target = agent_steps[-1] if agent_steps else (turn[-1] if turn else None)
        if target is None:
            self.system(entry, "", {"run": plain_json(data)})
            return
        target["extra"][EXTENSION]["run"] = plain_json(data)
        target["extra"][EXTENSION]["entries"].append(entry.id)
        if target["source"] != "agent":
            return
        if isinstance(model, str) and model:
            for step in agent_steps:
                step["model_name"] = model
        metrics = {
            "prompt_tokens": usage.get(g.INPUT_TOKENS),
            "completion_tokens": usage.get(g.OUTPUT_TOKENS),
            "cached_tokens": usage.get(g.CACHE_READ_TOKENS),
        }
        metrics = {key: value for key, value in metrics.items() if value is not None}
        if metrics:
            bub = {"scope": "turn", "model_calls": data.get("steps")}
            # ATIF has no field for these: they go beside the scope, named as the chat-completions API names them
            for key, attribute in (
                ("reasoning_tokens", g.REASONING_TOKENS),
                ("cache_creation_tokens", g.CACHE_CREATION_TOKENS),
            ):
                if attribute in usage:
                    bub[key] = usage[attribute]
            target["metrics"] = {**metrics, "extra": {EXTENSION: bub}}
