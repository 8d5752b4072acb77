"""Comma commands: a prompt that starts with ``,`` runs a builtin tool directly, never the model.

Syntax: ``,NAME [key=value ...] [word ...]``, split like a shell line, so values with spaces are
quoted (``,handoff name=phase-2 summary="schema done"``). Bare words fill the tool's parameters in
the order they are declared, after the named ones: ``,handoff phase-2 "schema done"`` is the same
command. Strings become integers or booleans where the tool's schema asks for them
(``archive=true``).

Every builtin tool is a command under its own name (``,tape.search query=foo``), and the short
aliases ``,handoff``, ``,anchors`` and ``,memory`` are Bub's spellings. Each command run is logged
on the tape as an event ``command`` with ``{name, args, status}``, but ``,handoff ... preview=true``, which
writes nothing (``,handoff name=N accept=true`` writes what it showed). An unknown command, one that does
not parse or arguments that do not fit are refused with a :class:`CommandError` before anything is written.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bub_nb.agent.tools import Tool, ToolCallError, ToolContext, ToolRegistry, builtin_registry
from bub_nb.errors import BubNbError, CommandError
from bub_nb.tape.events import COMMAND
from bub_nb.tape.names import check_handoff_name

if TYPE_CHECKING:
    from bub_nb.tape import Tape, TapeEntry

PREFIX = ","
ALIASES: dict[str, str] = {
    "handoff": "tape.handoff",
    "anchors": "tape.anchors",
    "memory": "memory.show",
    "retract": "tape.retract",
    "unretract": "tape.unretract",
}
_NAME = re.compile(r"^[A-Za-z][\w.-]*$")
_KEY = re.compile(r"^[A-Za-z_]\w*$")
_TRUE, _FALSE = {"true", "yes", "on", "1"}, {"false", "no", "off", "0"}
_PREVIEWING = ("preview", "accept")


@dataclass(frozen=True, slots=True)
class ParsedCommand:
    """A command line split into its name, ``key=value`` arguments and bare words."""

    name: str
    kwargs: Mapping[str, str] = field(default_factory=dict)
    positional: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CommandResult:
    """What a command answered; ``entries`` are what it wrote on the tape, its ``command`` event last."""

    name: str
    output: str
    status: str = "ok"
    args: Mapping[str, Any] = field(default_factory=dict)
    entries: tuple[TapeEntry, ...] = ()

    def __str__(self) -> str:
        return self.output


def is_command(text: str) -> bool:
    """Whether a prompt is a comma command."""
    return isinstance(text, str) and text.strip().startswith(PREFIX)


def parse_command(text: str) -> ParsedCommand:
    """Split a command line; :class:`CommandError` names what cannot be parsed."""
    if not is_command(text):
        raise CommandError(f"{text!r} is not a command; commands start with {PREFIX!r}")
    body = text.strip()[len(PREFIX) :]
    try:
        words = shlex.split(body)
    except ValueError as exc:
        raise CommandError(f"Command {text.strip()!r} cannot be parsed: {exc}") from None
    if not words:
        raise CommandError(f"Command {text.strip()!r} has no name; try ,help")
    name, *rest = words
    if not _NAME.match(name):
        raise CommandError(f"Command name {name!r} must start with a letter and hold letters, digits, '_', '.', '-'")
    kwargs: dict[str, str] = {}
    positional: list[str] = []
    for word in rest:
        key, equals, value = word.partition("=")
        if not equals:
            positional.append(word)
        elif not _KEY.match(key):
            raise CommandError(f"Argument {word!r} of ,{name} needs a name before '=' (letters, digits, '_')")
        elif key in kwargs:
            raise CommandError(f"Argument {key!r} of ,{name} is given twice")
        else:
            kwargs[key] = value
    return ParsedCommand(name, kwargs, tuple(positional))


HANDOFF_TOOL = "tape.handoff"


@dataclass(frozen=True, slots=True)
class CheckedCommand:
    """A comma command that parsed, names a command and has arguments that fit it (``tool`` None for help)."""

    parsed: ParsedCommand
    tool: Tool | None
    arguments: dict[str, Any]


def check_command(text: str, registry: ToolRegistry) -> CheckedCommand:
    """Parse a comma command and check its name and arguments; a :class:`CommandError` names what is wrong."""
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
    if _is_preview(parsed):  # a preview's arguments are not the tool's: the model is never offered them
        return CheckedCommand(parsed, tool, dict(_preview_arguments(parsed)))
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


def run_command(
    tape: Tape,
    text: str,
    tools: ToolRegistry | None = None,
    meta: Mapping[str, Any] | None = None,
    state: Mapping[str, Any] | None = None,
) -> CommandResult:
    """Run one comma command on ``tape`` with the builtin tools (or ``tools``) and log it there.

    ``meta`` goes on the ``command`` event (a notebook passes the cell it came from); ``state`` is the
    tools' (an agent passes itself, so ``,handoff summarize=true`` has a model to summarize with).
    """
    registry = tools if tools is not None else builtin_registry()
    parsed = parse_command(text)
    if _is_preview(parsed):
        return _previewed(tape, parsed, meta, state)
    checked = check_command(text, registry)  # an unknown or malformed command writes nothing
    command = checked.tool
    if command is None:
        return _logged(tape, meta, CommandResult("help", help_text(registry)))
    arguments = checked.arguments
    before = tape.last_id
    marker = tape.read(before, before + 1)
    try:
        output = command.run_sync(arguments, ToolContext(tape=tape, state=dict(state or {})))
    except ToolCallError as exc:
        if isinstance(exc.__cause__, BubNbError) and tape.last_id == before:
            raise CommandError(str(exc.__cause__)) from None  # the API refused before writing: so do we
        _logged(tape, meta, CommandResult(command.name, exc.message, "error", arguments))
        raise CommandError(exc.message) from exc
    # A changed entry at the old end means the tape started over (tape.reset): all of it is new.
    restarted = bool(before) and tape.read(before, before + 1) != marker
    written = tuple(tape.read(1 if restarted else before + 1))
    return _logged(tape, meta, CommandResult(command.name, str(output), "ok", arguments, written))


def command_names(tools: ToolRegistry) -> list[str]:
    """Every command name, ``help`` and the aliases first."""
    return ["help", *ALIASES, *tools.names]


def help_text(tools: ToolRegistry) -> str:
    """The ``,help`` answer: the syntax, the aliases and one line per tool with its parameters."""
    lines = [
        "Commands start with ',' and take key=value arguments; bare words fill the parameters in order.",
        "  ,help  this list",
    ]
    lines += [f"  ,{alias}  same as ,{target}" for alias, target in ALIASES.items() if target in tools]
    for command in tools:
        properties = command.parameters.get("properties", {})
        required = set(command.parameters.get("required", ()))
        usage = " ".join(f"{key}=…" if key in required else f"[{key}=…]" for key in properties)
        summary = command.description.strip().splitlines()[0] if command.description.strip() else ""
        lines.append(f"  ,{command.name} {usage}".rstrip() + f"  {summary}")
    return "\n".join(lines)


def arguments_for(command: Tool, parsed: ParsedCommand) -> dict[str, Any]:
    """The command's ``key=value`` and bare words as the tool's arguments, typed as its schema asks."""
    properties: Mapping[str, Any] = command.parameters.get("properties", {})
    free = [key for key in properties if key not in parsed.kwargs]
    if len(parsed.positional) > len(free):
        extra = " ".join(shlex.quote(word) for word in parsed.positional[len(free) :])
        raise CommandError(f"Command ,{parsed.name} got more words than it has parameters: {extra}")
    raw = {**parsed.kwargs, **dict(zip(free, parsed.positional, strict=False))}
    return {key: _coerce(value, properties.get(key, {})) for key, value in raw.items()}


def _coerce(value: str, schema: Mapping[str, Any]) -> Any:
    kinds = schema.get("type", "string")
    kinds = [kinds] if isinstance(kinds, str) else list(kinds)
    if "string" in kinds:
        return value
    if "boolean" in kinds and value.lower() in _TRUE | _FALSE:
        return value.lower() in _TRUE
    if "integer" in kinds and re.fullmatch(r"[+-]?\d+", value):
        return int(value)
    if "number" in kinds:
        try:
            return float(value)
        except ValueError:
            pass
    return value  # left as text, so the schema check names the mismatch


def _previewed(
    tape: Tape, parsed: ParsedCommand, meta: Mapping[str, Any] | None, state: Mapping[str, Any] | None
) -> CommandResult:
    """``,handoff name=N [summarize=true] preview=true`` shows a handoff and writes nothing (not even its
    ``command`` event); ``,handoff name=N accept=true`` writes the newest preview of ``N`` as it was shown."""
    from bub_nb.agent.phase_handoff import pending_preview  # the handoff module runs commands' checks in its preflight

    args = _preview_arguments(parsed)
    name = args["name"]
    if args.get("accept", "").lower() in _TRUE:
        preview = pending_preview(tape, name)
        if preview is None:
            raise CommandError(f"No preview of handoff {name!r} to accept: run ,handoff name={name} preview=true first")
        written = preview.accept()  # a stale preview is refused there, with nothing written
        anchor = next(entry for entry in written if entry.kind == "anchor")
        output = f"anchor added: {name} (#{anchor.id}) as previewed"
        result = CommandResult(HANDOFF_TOOL, output, "ok", {"name": name, "accept": True}, tuple(written))
        return _logged(tape, meta, result)
    agent = (state or {}).get("agent")
    if agent is None:
        raise CommandError("preview=true needs an agent's model: run it in a %%bub or comma cell")
    summarize = args.pop("summarize", "false").lower() in _TRUE
    given = {key: value for key, value in args.items() if key in ("summary", "next_steps")}
    preview = agent.preview_handoff(name, summarize=summarize, **given)  # a failed summary raises, writing nothing
    return CommandResult(HANDOFF_TOOL, preview.to_text(), "ok", {"name": name, "preview": True})


def _is_preview(parsed: ParsedCommand) -> bool:
    return ALIASES.get(parsed.name, parsed.name) == HANDOFF_TOOL and bool({"preview", "accept"} & parsed.kwargs.keys())


def _preview_arguments(parsed: ParsedCommand) -> dict[str, str]:
    """The arguments of a ``,handoff`` that previews or accepts, checked; a :class:`CommandError` says what is wrong."""
    args = dict(parsed.kwargs)
    free = [key for key in ("name", "summary", "next_steps") if key not in args]
    args.update(zip(free, parsed.positional, strict=False))
    if len(parsed.positional) > len(free) or set(args) - {"name", "summary", "next_steps", "summarize", *_PREVIEWING}:
        raise CommandError(",handoff with preview= or accept= takes name=, summary=, next_steps= and summarize=")
    try:
        check_handoff_name(args.get("name"))
    except BubNbError as exc:
        raise CommandError(str(exc)) from None
    if args.get("accept", "").lower() in _TRUE and set(args) - {"name", "accept"}:
        raise CommandError(f",handoff name={args['name']} accept=true writes the preview as shown: it takes no more")
    return args


def _logged(tape: Tape, meta: Mapping[str, Any] | None, result: CommandResult) -> CommandResult:
    data = {"name": result.name, "args": dict(result.args), "status": result.status}
    event = tape.append_event(COMMAND, data, **dict(meta or {}))
    return CommandResult(result.name, result.output, result.status, result.args, (*result.entries, event))
