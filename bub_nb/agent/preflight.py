"""Checks a turn passes before its first entry is written: a wrong write is permanent, so refuse first.

A refusal raises a :class:`~bub_nb.errors.BubNbError` and leaves the tape's entry count unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bub_nb.context.strategies import NamedAnchor
from bub_nb.context.tokens import count_messages_tokens
from bub_nb.errors import BubNbError, CommandError, ContextLengthError, ToolCallError
from bub_nb.tape.reserved import check_handoff_name

if TYPE_CHECKING:
    from bub_nb.agent.commands import ParsedCommand
    from bub_nb.agent.loop import Agent
    from bub_nb.agent.tools import Tool, ToolRegistry

HANDOFF_TOOL = "tape.handoff"


@dataclass(frozen=True, slots=True)
class CheckedCommand:
    """A comma command that parsed, names a command and has arguments that fit it (``tool`` None for help)."""

    parsed: ParsedCommand
    tool: Tool | None
    arguments: dict[str, Any]


def check_command(text: str, registry: ToolRegistry) -> CheckedCommand:
    """Parse a comma command and check its name and arguments; a :class:`CommandError` names what is wrong."""
    from bub_nb.agent.commands import ALIASES, PREFIX, arguments_for, command_names, parse_command

    parsed = parse_command(text)
    name = ALIASES.get(parsed.name, parsed.name)
    if name == "help":
        if parsed.kwargs or parsed.positional:
            raise CommandError(f"Command ,{parsed.name} takes no arguments")
        return CheckedCommand(parsed, None, {})
    if name not in registry:
        known = ", ".join(PREFIX + command for command in command_names(registry))
        raise CommandError(f"Unknown command {PREFIX + parsed.name!r}; known commands: {known}")
    tool = registry.get(name)
    arguments = arguments_for(tool, parsed)
    try:
        arguments = tool.validate(arguments)
    except ToolCallError as exc:
        raise CommandError(exc.message) from None
    if tool.name == HANDOFF_TOOL:
        try:
            check_handoff_name(arguments.get("name"))
        except BubNbError as exc:
            raise CommandError(str(exc)) from None
    return CheckedCommand(parsed, tool, arguments)


def check_turn(agent: Agent, prompt: object) -> None:
    """Everything a turn needs before it writes: a prompt, a command that parses, a view, a prompt that fits.

    A mode naming an anchor the tape does not hold is refused here, before the system prompt and
    the user message are on the tape.
    """
    from bub_nb.agent.builtin_tools import builtin_registry
    from bub_nb.agent.commands import is_command

    if not isinstance(prompt, str) or not prompt.strip():
        raise BubNbError(f"Prompt {prompt!r} is empty; write something for the model to answer")
    if is_command(prompt):
        check_command(prompt, builtin_registry())
        return
    check_mode(agent)
    check_prompt_fits(agent, prompt)


def check_mode(agent: Agent) -> None:
    """A view mode that names an anchor must name one the tape holds (an :class:`AnchorNotFoundError`)."""
    mode = agent.context
    name = mode if isinstance(mode, str) else mode.name if isinstance(mode, NamedAnchor) else None
    if name is not None:
        agent.tape.find_anchor(name)


def check_prompt_fits(agent: Agent, prompt: str) -> None:
    """Refuse a prompt that alone, with the system prompt, is over the model's known context window.

    No handoff can help such a prompt (a new phase still has to send it), so it is refused
    before writing rather than recorded, retried after an ``auto_handoff`` anchor, and failed.
    """
    window = context_window_of(agent.model)
    if window is None:
        return
    messages = [{"role": "system", "content": agent.system_prompt(prompt)}, {"role": "user", "content": prompt}]
    tokens = count_messages_tokens(messages)
    if tokens > window:
        raise ContextLengthError(
            f"The prompt alone is ≈ {tokens} tokens with the system prompt, over the {window}-token context "
            f"window of {agent.model.name!r}; nothing was written: shorten it or use a model with a larger window"
        )


def context_window_of(model: object) -> int | None:
    """The model's context window in tokens, if it declares one or an endpoint has reported it."""
    window = getattr(model, "context_window", None)
    return window if isinstance(window, int) and not isinstance(window, bool) and window > 0 else None
