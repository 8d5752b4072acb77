"""Items of OpenAI's Responses API (what Codex CLI and the Agents SDK keep) as entries of a draft."""

from __future__ import annotations

from typing import Any

from bub_nb.imports.draft import TapeDraft

CALLS = ("function_call", "custom_tool_call", "local_shell_call")
OUTPUTS = ("function_call_output", "custom_tool_call_output", "local_shell_call_output")


def add_item(draft: TapeDraft, item: dict[str, Any], /, **meta: Any) -> bool:
    """Add one item; ``False`` when it is of a type this reading does not know (the caller keeps it)."""
    kind = item.get("type", "message" if "role" in item else None)
    if kind == "message":
        role = item.get("role")
        if not isinstance(role, str):
            return False
        # An instruction the tool injects between a call and its output follows the output on the tape.
        instruction = role in ("developer", "system")
        draft.message({"role": role, "content": message_content(item.get("content"))}, after_calls=instruction, **meta)
        return True
    if kind in CALLS:
        arguments = item.get("arguments", item.get("input", item.get("action")))
        name = item.get("name") or kind.removesuffix("_call")
        draft.call(str(item.get("call_id") or item.get("id") or ""), str(name), arguments, **meta)
        return True
    if kind in OUTPUTS:
        output, failed = output_value(item.get("output"))
        draft.result(str(item.get("call_id") or ""), output, error=failed, **meta)
        return True
    if kind == "reasoning":
        summary = [part.get("text") for part in item.get("summary") or () if isinstance(part, dict)]
        draft.event("import.reasoning", {"summary": [text for text in summary if isinstance(text, str)]}, **meta)
        return True
    return False


def message_content(content: Any) -> Any:
    """Responses-API content as chat content: the text when it is only text, else chat content parts."""
    if not isinstance(content, list):
        return content if isinstance(content, str) else ""
    parts: list[dict[str, Any]] = []
    for part in content:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind in ("input_text", "output_text", "text", "summary_text") and isinstance(part.get("text"), str):
            parts.append({"type": "text", "text": part["text"]})
        elif kind == "input_image" and part.get("image_url"):
            parts.append({"type": "image_url", "image_url": {"url": part["image_url"]}})
        elif kind == "refusal" and isinstance(part.get("refusal"), str):
            parts.append({"type": "text", "text": part["refusal"]})
        else:
            parts.append(part)
    if all(part.get("type") == "text" for part in parts):
        return "\n\n".join(part["text"] for part in parts)
    return parts


def output_value(output: Any) -> tuple[Any, bool]:
    """A call's output as a tool result, and whether it failed (older Codex kept ``{content, success}``)."""
    if isinstance(output, dict) and "content" in output:
        return output_value(output["content"])[0], output.get("success") is False
    if isinstance(output, list):
        content = message_content(output)
        return content, False
    return output if output is not None else "", False
