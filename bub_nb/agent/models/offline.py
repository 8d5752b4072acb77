"""The offline teaching model: deterministic answers that describe the context it was sent.

No language model is involved and nothing touches the network, so lessons and demos run anywhere.
Every answer says where it comes from. The model reports how many messages of each role it got,
the anchor its view starts at (with the anchor state's summary), whether the system prompt holds a
``<memory>`` block, and the last user message. Two requests make it call a tool when that tool is
offered: ``remember: <text>`` calls ``memory_save``, ``handoff <name>: <summary>`` calls
``tape_handoff``, ``run: <code>`` calls ``python_run``, and ``call <tool> {json arguments}`` calls any offered tool
(an MCP server's ``mcp.time.get_current_time``, say). A notebook variable named in backticks
(``describe `df` ``) makes it call ``notebook_inspect``. When a tool's result comes back it reports
that result: a description from ``notebook_inspect`` in full, any other result in one sentence.
Asked to summarize a phase, it answers with the extractive summary (:mod:`.extractive`).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from bub_nb.agent.models.base import Completion, LocalModel, Message, ToolCall, ToolSchema, message_text
from bub_nb.agent.models.echo import echo_lines
from bub_nb.agent.summaries.extractive import extractive_summary, is_summary_request, parse_items, reply_text
from bub_nb.context.phases import EARLIER_PHASE
from bub_nb.tape.entries import ROLES
from bub_nb.tape.events import CONTEXT_HANDOFF

__all__ = ["OfflineModel"]

LABEL = "[offline teaching model; no language model was called]"
_ANCHOR = re.compile(r"^\[Anchor created: (?P<name>[^\]]*)\]:\s*(?P<state>.*)$", re.DOTALL)
_REMEMBER = re.compile(r"^\s*remember\s*:\s*(?P<content>\S.*?)\s*$", re.DOTALL | re.IGNORECASE)
_HANDOFF = re.compile(r"^\s*handoff\s+(?P<name>[^\s:]+)\s*:\s*(?P<summary>.*?)\s*$", re.DOTALL | re.IGNORECASE)
_CALL = re.compile(r"^\s*call\s+(?P<name>[A-Za-z0-9_.-]{1,64})\s*(?P<arguments>\{.*\})?\s*$", re.DOTALL | re.IGNORECASE)
_RUN = re.compile(r"^\s*run\s*:\s*(?P<code>\S.*?)\s*$", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"^```(?:python|py)?\s*\n(?P<code>.*?)\n?```$", re.DOTALL)
_BACKTICKED = re.compile(r"`(?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*|\[[^`\]]+\])*)`")
_INSPECT = "notebook_inspect"
_QUOTE_LIMIT = 200
_DESCRIPTION_LINES = 40


def _quote(text: str) -> str:
    text = " ".join(text.split())
    return json.dumps(text if len(text) <= _QUOTE_LIMIT else text[: _QUOTE_LIMIT - 1] + "…", ensure_ascii=False)


def _tool_names(tools: list[ToolSchema] | None) -> list[str]:
    return [str((tool.get("function") or {}).get("name", "")) for tool in tools or ()]


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _failure(text: str) -> tuple[str, str] | None:
    """A tool's error result (``{"kind", "message"}`` as JSON) as its kind and message; ``None`` for any other."""
    if not text.startswith('{"kind"'):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return (str(value.get("kind")), str(value.get("message", ""))) if isinstance(value, dict) else None


class OfflineModel(LocalModel):
    """A deterministic local model for teaching; ``context_window`` makes long prompts fail as APIs do."""

    quotes_summaries = True
    """Its summaries quote the entries they cite, or say what the phase holds: no claim to check against them."""

    def __init__(self, context_window: int | None = None, *, echo: bool = False, show_tools: bool = False) -> None:
        self.name = "offline:echo" if echo else "offline"  # what `-m` takes to get this very model back
        self.context_window = context_window
        self.echo = echo
        self.show_tools = show_tools

    def __repr__(self) -> str:
        echo = ", echo=True" if self.echo else ""
        return f"OfflineModel(context_window={self.context_window!r}{echo})"

    def answer(self, messages: list[Message], tools: list[ToolSchema] | None, prompt_tokens: int) -> Completion:
        if is_summary_request(messages):
            items = parse_items("\n".join(message_text(m) for m in messages[1:] if m.get("role") == "user"))
            return self.completion(reply_text(*extractive_summary(items)), (), prompt_tokens)
        if messages and messages[-1].get("role") == "tool":
            return self.completion(self._report_tool_results(messages), (), prompt_tokens)
        user = next((message_text(m) for m in reversed(messages) if m.get("role") == "user"), None)
        offered = _tool_names(tools)
        call, missing = self._requested_call(user or "", offered, messages)
        if call is not None:
            return self.completion("", (call,), prompt_tokens)
        text = self._describe(messages, user, offered)
        if missing:
            text += f"\n- You asked for `{missing}`, but that tool was not offered, so nothing was written."
        return self.completion(text, (), prompt_tokens)

    # -- tool requests ---------------------------------------------------------------------------

    def _requested_call(
        self, user: str, offered: list[str], messages: list[Message]
    ) -> tuple[ToolCall | None, str | None]:
        """The tool call the last user message asks for, or the name of a requested tool not offered."""
        request: tuple[str, dict[str, Any]] | None = None
        if (match := _CALL.match(user)) and (arguments := _json_object(match["arguments"] or "{}")) is not None:
            request = (match["name"].replace(".", "_"), arguments)
        elif match := _REMEMBER.match(user):
            request = ("memory_save", {"content": match["content"]})
        elif match := _HANDOFF.match(user):
            request = ("tape_handoff", {"name": match["name"], "summary": match["summary"]})
        elif match := _RUN.match(user):
            fenced = _FENCE.match(match["code"])
            request = ("python_run", {"code": fenced["code"] if fenced else match["code"]})
        elif (match := _BACKTICKED.search(user)) and _INSPECT in offered:
            request = (_INSPECT, {"name": match["name"]})
        if request is None:
            return None, None
        name, arguments = request
        if name not in offered:
            return None, name
        # ids count the calls already in the conversation, so replays give the same ids
        earlier = sum(len(m.get("tool_calls") or ()) for m in messages if m.get("role") == "assistant")
        return ToolCall(f"call_offline_{earlier + 1}", name, json.dumps(arguments, ensure_ascii=False)), None

    def _report_tool_results(self, messages: list[Message]) -> str:
        results: list[dict[str, Any]] = []
        for message in reversed(messages):
            if message.get("role") != "tool":
                break
            results.insert(0, message)
        names = {}
        for message in messages:
            for call in message.get("tool_calls") or ():
                names[call.get("id")] = (call.get("function") or {}).get("name", "a tool")
        reports, descriptions = [], []
        for result in results:
            name = names.get(result.get("tool_call_id"), result.get("name") or "a tool")
            text = message_text(result)
            if name == _INSPECT and _failure(text) is None:
                lines = text.splitlines()
                shown = "\n".join(lines[:_DESCRIPTION_LINES]) + ("\n…" if len(lines) > _DESCRIPTION_LINES else "")
                heading = f"{LABEL} I looked it up with `notebook.inspect`; this came back:"
                descriptions.append(f"{heading}\n\n```\n{shown}\n```")
            elif failure := _failure(text):
                reports.append(f"{name} did not succeed ({failure[0]}): {_quote(failure[1])}")
            else:
                reports.append(f"{name} returned {_quote(text)}")
        if descriptions and not reports:
            return "\n\n".join(descriptions)
        return "\n\n".join([*descriptions, f"{LABEL} Done: {'; '.join(reports)}"] if reports else descriptions)

    # -- describing the context ------------------------------------------------------------------

    def _describe(self, messages: list[Message], user: str | None, offered: list[str]) -> str:
        if self.echo:
            return "\n".join(
                [LABEL, *(f"- {line}" for line in echo_lines(messages, offered, show_tools=self.show_tools))]
            )
        counts = Counter(str(m.get("role")) for m in messages)
        ordered = [role for role in ROLES if counts[role]] + sorted(set(counts) - set(ROLES))
        by_role = ", ".join(f"{counts[role]} {role}" for role in ordered)
        plural = "" if len(messages) == 1 else "s"
        facts = [f"I received {len(messages)} message{plural}: {by_role}.", self._describe_anchor(messages)]
        system = "\n".join(message_text(m) for m in messages if m.get("role") == "system")
        if not system:
            facts.append("There is no system prompt.")
        else:
            facts.append(f"The system prompt {'has a' if '<memory>' in system else 'has no'} `<memory>` block.")
        if offered:
            facts.append(f"Tools offered: {', '.join(f'`{name}`' for name in offered)}.")
        facts.append("There is no user message." if user is None else f"Your last message: {_quote(user)}")
        # one fact per Markdown list item, so the answer reads well both in a cell and as plain text
        return "\n".join([LABEL, *(f"- {fact}" for fact in facts)])

    def _describe_anchor(self, messages: list[Message]) -> str:
        talk = [m for m in messages if m.get("role") not in ("system", "developer")]
        # The phases mode sends each earlier phase, as one message, before the anchor the view starts at.
        earlier: list[str] = []
        for message in talk:
            text = message_text(message)
            if message.get("role") != "assistant" or not text.startswith(EARLIER_PHASE):
                break
            earlier.append(text.removeprefix(EARLIER_PHASE).split(" (")[0])
        first = talk[len(earlier)] if len(talk) > len(earlier) else None
        match = _ANCHOR.match(message_text(first)) if first and first.get("role") == "assistant" else None
        starts = "The view starts at anchor"
        if earlier:
            listed = ", ".join(f"`{name}`" for name in earlier)
            phases = f"{len(earlier)} earlier phase{'s' if len(earlier) > 1 else ''}"
            starts = f"The view carries {phases} ({listed}), then starts at anchor"
        if match is None:
            return "The view does not start at an anchor."
        try:
            state = json.loads(match["state"]) if match["state"].strip() else None
        except ValueError:
            state = None
        handed = state.get(CONTEXT_HANDOFF) if isinstance(state, dict) else None
        if isinstance(handed, dict) and isinstance(handed.get("content"), dict):  # from another agent
            content = handed["content"]
            reason = f" because {_quote(str(content['reason']))}" if content.get("reason") else ""
            steps = (content.get("intention") or {}).get("next_steps")
            then = f"; next steps: {_quote(str(steps))}" if steps else ""
            said = f", whose summary is {_quote(str(content['summary']))}" if content.get("summary") else ""
            return f"{starts} `{match['name']}`, handed over by `{handed.get('from')}`{reason}{said}{then}"
        summary = state.get("summary") if isinstance(state, dict) else None
        if summary:
            return f"{starts} `{match['name']}`, whose summary is {_quote(str(summary))}"
        return f"{starts} `{match['name']}`."
