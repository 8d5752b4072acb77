"""The offline model's echo mode: what each message it received holds, so a class sees content, not counts."""

from __future__ import annotations

import json
import re

from bub_nb.agent.models.base import Message, message_text

ECHO_CHARS = 60
_ANCHOR = re.compile(r"^\[Anchor created: (?P<name>[^\]]*)\]:\s*(?P<state>.*)$", re.DOTALL)
_MEMORY = re.compile(r"<memory>(?P<body>.*?)</memory>", re.DOTALL)


def echo_lines(messages: list[Message], offered: list[str], *, show_tools: bool) -> list[str]:
    """One line per message (its position, role and first characters), then the anchor's state, the memory
    block, and the tools only when ``show_tools``."""
    lines = [f"I received {len(messages)} message{'' if len(messages) == 1 else 's'}:"]
    for position, message in enumerate(messages, 1):
        text = " ".join(message_text(message).split())
        clipped = text[:ECHO_CHARS] + ("…" if len(text) > ECHO_CHARS else "")
        lines.append(f"{position}. {message.get('role')}: {clipped}")
    for message in messages:
        match = _ANCHOR.match(message_text(message)) if message.get("role") == "assistant" else None
        if match:
            lines.append(f"The anchor `{match['name']}` carries: {_state(match['state'])}")
            break
    system = "\n".join(message_text(m) for m in messages if m.get("role") == "system")
    memory = _MEMORY.search(system)
    if memory:
        held = " ".join(memory["body"].split())
        lines.append(f"The memory block holds: {held[: 4 * ECHO_CHARS] or '(nothing)'}")
    else:
        lines.append("The system prompt has no memory block.")
    if show_tools and offered:
        lines.append(f"Tools offered: {', '.join(f'`{name}`' for name in offered)}.")
    elif offered:
        lines.append(f"{len(offered)} tools offered (not listed).")
    return lines


def _state(raw: str) -> str:
    try:
        state = json.loads(raw) if raw.strip() else None
    except ValueError:
        return raw.strip()[: 2 * ECHO_CHARS] or "(no state)"
    if not isinstance(state, dict) or not state:
        return "(no state)"
    return "; ".join(f"{key}: {value}" for key, value in state.items())
