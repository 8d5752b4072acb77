"""The sessions the real CLIs are driven through, and the scripted model's side of them.

Claude Code: "Say hello" (a plain answer); then, resumed, two parallel Bash calls of which one exits 1, a
sub-agent (the ``Agent`` tool) that runs a command of its own, and a long answer streamed in several hundred
deltas; then ``/compact`` in the resumed session. A ``PreToolUse`` hook is configured, as many users have one.
Codex: two parallel ``exec_command`` calls (one exits 1) whose usage passes ``model_auto_compact_token_limit``,
so Codex compacts in the middle of the turn (its summary request has no tools), then a long answer. A second
Codex session delegates: ``spawn_agent`` (a sub-agent with its own rollout answers), ``wait_agent``, an answer.
"""

from __future__ import annotations

import json
import re
from typing import Any

from harness.cli_endpoint import Reply, Tool
from harness.clis import CliHome

LONG_ANSWER = " ".join(f"Point {number} of the long answer." for number in range(1, 121))
"""A reply streamed in several hundred deltas."""

SUMMARY = "Summary of the work so far: two commands ran, one failed; a helper listed the files."

# -- Claude Code ----------------------------------------------------------------------------------------


def _texts(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or () if isinstance(b, dict) and b.get("type") == "text")


def claude_reply(api: str, body: dict[str, Any]) -> Reply:
    """The script: a plain answer; then two parallel Bash calls (one fails); a sub-agent; a long answer."""
    messages = body.get("messages") or []
    users = [_texts(m.get("content")) for m in messages if m.get("role") == "user"]
    results = sum(
        1 for m in messages if isinstance(m.get("content"), list)
        for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"
    )  # fmt: skip
    last = users[-1] if users else ""
    if "<task-notification>" in last:  # the sub-agent has finished
        return Reply.text("Noted.", input_tokens=900, output_tokens=4)
    if not body.get("tools") or re.search(r"summar", last, re.IGNORECASE):
        return Reply.text(SUMMARY, input_tokens=900, output_tokens=60)  # the compaction, or a side request
    if any("HELPER:" in text for text in users):  # the sub-agent's own conversation
        if results == 0:
            return Reply((Tool("Bash", {"command": "ls -a", "description": "List files"}),), 150, 12)
        return Reply.text("The folder is empty.", input_tokens=260, output_tokens=9)
    if "Say hello" in users[-1] and results == 0:
        return Reply.text("Hello from the scripted model.", input_tokens=120, output_tokens=8, cache_read=40)
    if "Run two commands" in "".join(users):
        if results == 0:
            calls = (
                Tool("Bash", {"command": "echo one", "description": "Print one"}),
                Tool("Bash", {"command": "exit 1", "description": "Fail on purpose"}),
            )
            return Reply(("I will run both at once.", *calls), 400, 55, cache_read=100)
        if results == 2:
            task = {"description": "List files", "prompt": "HELPER: list the files", "subagent_type": "general-purpose"}
            return Reply(("Now a helper lists the files.", Tool("Agent", task)), 600, 35)
        if results == 3:
            return Reply.text(LONG_ANSWER, input_tokens=800, output_tokens=700)
    return Reply.text("Noted.", input_tokens=900, output_tokens=4)


def codex_reply(api: str, body: dict[str, Any]) -> Reply:
    """The script: two parallel ``exec_command`` calls (one fails) whose usage passes the compaction limit,
    the summary Codex asks for, then a long answer."""
    items = body.get("input") or []
    outputs = sum(1 for item in items if item.get("type") == "function_call_output")
    if not body.get("tools"):
        return Reply.text(SUMMARY, input_tokens=5200, output_tokens=60)  # the compaction's request
    if outputs == 0 and not any(SUMMARY in json.dumps(item) for item in items):
        calls = (Tool("exec_command", {"cmd": "echo one"}), Tool("exec_command", {"cmd": "exit 1"}))
        return Reply(("Running both.", *calls), 5000, 55, cache_read=1200)
    return Reply.text(LONG_ANSWER, input_tokens=3000, output_tokens=700, cache_read=800)


def claude_session_runs(cli: CliHome) -> list[dict[str, Any]]:
    """Drive Claude Code through the session; returns what each run printed (``--output-format json``)."""
    # A PreToolUse hook: the first call runs while the reply still streams, so its result and the hook's
    # records land between the reply's tool_use records.
    hook = {"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}
    cli.claude_settings({"hooks": {"PreToolUse": [hook]}})
    hello = cli.claude("Say hello")
    work = cli.claude("Run two commands, then have a helper list the files.", "--resume", hello["session_id"])
    compact = cli.claude("/compact", "--resume", hello["session_id"])
    return [hello, work, compact]


def codex_session_run(cli: CliHome) -> str:
    """Drive Codex through the session; returns what it printed."""
    cli.codex_config(model_auto_compact_token_limit=4000)
    run = cli.codex("Run two commands.")
    return run.stdout + run.stderr


HELPER_PROMPT = "HELPER: report that you are done."


def codex_delegating_reply(api: str, body: dict[str, Any]) -> Reply:
    """The delegating session: ``spawn_agent``, then ``wait_agent`` on the agent it names, then an answer."""
    items = body.get("input") or []
    outputs = [item.get("output") for item in items if item.get("type") == "function_call_output"]
    if not any(HELPER_PROMPT in json.dumps(item) for item in items if item.get("type") == "function_call"):
        if HELPER_PROMPT in json.dumps(items):
            return Reply.text("The helper is done.", input_tokens=300, output_tokens=6)  # the sub-agent itself
        return Reply((Tool("spawn_agent", {"message": HELPER_PROMPT}, "multi_agent_v1"),), 1000, 20)
    if len(outputs) == 1:
        agent = json.loads(str(outputs[0]))["agent_id"]
        return Reply((Tool("wait_agent", {"targets": [agent], "timeout_ms": 60000}, "multi_agent_v1"),), 1100, 15)
    return Reply.text("The helper reported back.", input_tokens=1200, output_tokens=7)


def codex_delegating_run(cli: CliHome) -> str:
    cli.codex_config()
    run = cli.codex("Delegate to a helper.")
    return run.stdout + run.stderr
