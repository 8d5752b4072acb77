"""The options of a turn, declared once: the ``BubMagics`` trait each falls back to, and its ``%%bub`` and ``%agent``
flags with their help. The magics' parsers, ``%agent``'s usage and the settings an agent records all read this table,
so an option added here reaches every place that takes it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from IPython.core.magic_arguments import argument

Magic = TypeVar("Magic", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True)
class TurnOption:
    """One option of a turn: ``name`` is its attribute on the parsed line and on ``AgentSettings``; ``trait`` the
    ``BubMagics`` trait (``%config BubMagics.<trait>``) it falls back to; ``bub`` and ``agent`` its flags on
    ``%%bub`` and ``%agent`` (empty: that magic does not take it), with their help."""

    name: str
    trait: str
    bub: tuple[str, ...] = ()
    bub_help: str = ""
    agent: tuple[str, ...] = ()
    agent_help: str = ""
    metavar: str | None = None  # how the magics' help names its value; None: argparse's (MODEL, TOOLS)
    shown: str | None = None  # how %agent's usage names its value, as a hint of its form; None: the metavar
    type: Callable[[str], Any] | None = None  # how a flag's value is read; None: as typed

    @property
    def flag(self) -> str:
        """Its long flag, as an error names it: ``--model``."""
        return next(flag for flag in (*self.bub, *self.agent) if flag.startswith("--"))

    def usage(self) -> str:
        """How ``%agent``'s usage shows it: ``[-m MODEL]``."""
        return f"[{self.agent[0]} {self.shown or self.metavar or self.name.upper()}]"


TURN_OPTIONS = (
    TurnOption(
        "model",
        "model",
        bub=("-m", "--model"),
        bub_help="model for this turn, e.g. offline or openai:gpt-4o-mini",
        agent=("-m", "--model"),
        agent_help="its model, e.g. offline or openai:gpt-4o-mini",
    ),
    TurnOption(
        "instructions",
        "system_prompt",
        agent=("--instructions",),
        agent_help="what it is for, added to its system prompt",
        metavar="TEXT",
    ),
    TurnOption(
        "tools",
        "tools",
        bub=("--tools",),
        bub_help="comma-separated tools: builtin names, globs like memory.*, or notebook functions",
        agent=("--tools",),
        agent_help="its tools, as %%bub --tools takes them",
        shown="a,b",
    ),
    TurnOption(
        "context",
        "context",
        bub=("--context",),
        bub_help="view mode: last, full, phases, recall, last+recall, window:N, notebook or an anchor",
        agent=("--context",),
        agent_help="its view mode, as %%bub --context takes it",
        shown="MODE",
    ),
    TurnOption(
        "budget",
        "budget",
        bub=("--budget",),
        bub_help="refuse a prompt estimated over N tokens; 0: no budget",
        metavar="N",
        type=int,
    ),
    TurnOption("max_steps", "max_steps"),
    TurnOption("result_budget", "tool_budget"),
    TurnOption("handoff_at", "handoff_at"),
    TurnOption("embedding_model", "embedding_model"),
)
"""Every option of a turn, in the order the magics list them. One with neither flag is set only with ``%config``."""

AGENT_SETTINGS = tuple(option.name for option in TURN_OPTIONS if option.agent)
"""What ``%agent NAME`` sets for one agent and records on its tape."""

AGENT_USAGE = "%agent NAME " + " ".join(option.usage() for option in TURN_OPTIONS if option.agent)


def bub_arguments(magic: Magic) -> Magic:
    """Add the turn options ``%%bub`` takes to its parser, where the decorator stands among its ``@argument``."""
    return _arguments(magic, [(option.bub, option.bub_help, option) for option in TURN_OPTIONS if option.bub])


def agent_arguments(magic: Magic) -> Magic:
    """Add the turn options ``%agent`` takes to its parser, each defaulting to ``None`` (not set)."""
    return _arguments(magic, [(option.agent, option.agent_help, option) for option in TURN_OPTIONS if option.agent])


def _arguments(magic: Magic, flags: list[tuple[tuple[str, ...], str, TurnOption]]) -> Magic:
    # Decorators apply from the bottom up and the parser lists the last applied first, so the table's order is
    # applied reversed.
    for names, help, option in reversed(flags):
        options: dict[str, Any] = {"default": None, "help": help, "dest": option.name}
        if option.metavar is not None:
            options["metavar"] = option.metavar
        if option.type is not None:
            options["type"] = option.type
        magic = argument(*names, **options)(magic)
    return magic
