"""What the OpenAI API refuses, and the error bodies it refuses with."""

from __future__ import annotations

import re
from typing import Any

TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
STATUS_MESSAGES = {
    400: "Bad request.",
    401: "Incorrect API key provided.",
    404: "The model does not exist or you do not have access to it.",
    429: "Rate limit reached for requests. Please try again shortly.",
    500: "The server had an error while processing your request. Sorry about that!",
    503: "The engine is currently overloaded, please try again later.",
}
_UNANSWERED = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
    "'tool_call_id'. The following tool_call_ids did not have response messages: "
)


def error_body(message: str, error_type: str, code: str | None = None, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": error_type, "param": param, "code": code}}


def context_length_error(limit: int, requested: int) -> dict[str, Any]:
    """OpenAI's answer to a prompt longer than the model's context."""
    message = (
        f"This model's maximum context length is {limit} tokens. However, your messages resulted in "
        f"{requested} tokens. Please reduce the length of the messages."
    )
    return error_body(message, "invalid_request_error", "context_length_exceeded", "messages")


def request_problem(body: Any) -> str | None:
    """What OpenAI would refuse in this chat request, worded as OpenAI words it; None when it is valid.

    Checked: a model name, a non-empty message list with known roles, tool names that match
    ``^[a-zA-Z0-9_-]{1,64}$``, tool messages that answer a pending call, and calls that are all
    answered before the conversation moves on.
    """
    if not isinstance(body, dict):
        return "The request body must be a JSON object."
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "you must provide a model parameter"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "'messages' must be a non-empty array"
    for tool in body.get("tools") or ():
        name = (tool.get("function") or {}).get("name") if isinstance(tool, dict) else None
        if not isinstance(name, str) or not TOOL_NAME.match(name):
            return f"Invalid 'tools': function name {name!r} does not match pattern '^[a-zA-Z0-9_-]{{1,64}}$'."
    pending: list[str] = []
    for position, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("system", "developer", "user", "assistant", "tool"):
            return f"Invalid value for 'messages[{position}].role': {role!r}."
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in pending:
                return (
                    "Invalid parameter: messages with role 'tool' must be a response to a preceding message "
                    f"with 'tool_calls' (messages[{position}] answers {call_id!r})."
                )
            pending.remove(call_id)
            continue
        if pending:
            return _UNANSWERED + ", ".join(pending)
        if role == "assistant":
            pending = [call.get("id") for call in message.get("tool_calls") or ()]
    return _UNANSWERED + ", ".join(pending) if pending else None
