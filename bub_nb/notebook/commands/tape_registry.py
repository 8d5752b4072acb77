"""The registry of ``%tape`` subcommands: (name, parser, handler), the help ``%tape?`` shows, and the options every
subcommand shares."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from IPython.core.error import UsageError
from IPython.core.magic_arguments import MagicArgumentParser

Handler = Callable[[Any, argparse.Namespace], Any]
"""A subcommand's handler: it takes the ``TapeCommands`` that runs it and the parsed arguments."""


@dataclass(frozen=True)
class Subcommand:
    """One ``%tape`` subcommand: its parser (which also writes its help) and what it does."""

    name: str
    parser: MagicArgumentParser
    handler: Handler


#: Every ``%tape`` subcommand, in the order ``%tape?`` lists them.
SUBCOMMANDS: dict[str, Subcommand] = {}


def subcommand(
    name: str, description: str, *arguments: tuple[tuple[str, ...], dict[str, Any]]
) -> Callable[[Handler], Handler]:
    """Register a handler as ``%tape NAME`` with its arguments (each ``arg(...)``)."""
    # IPython's help formatter writes the "%" before the name itself.
    parser = MagicArgumentParser(prog=f"tape {name}", description=description, add_help=False)
    for flags, options in arguments:
        parser.add_argument(*flags, **options)

    def register(handler: Handler) -> Handler:
        SUBCOMMANDS[name] = Subcommand(name, parser, handler)
        return handler

    return register


def arg(*flags: str, **options: Any) -> tuple[tuple[str, ...], dict[str, Any]]:
    """One argument of a subcommand, as ``ArgumentParser.add_argument`` takes it."""
    return flags, options


#: The subcommands that act on one tape: the holder's once the notebook has agents, or ``--agent NAME``'s.
ON_THE_HOLDERS_TAPE = ("info", "df", "search", "reset", "retract", "unretract")


def tape_help() -> str:
    """The help ``%tape?`` shows: the form of the magic, then each subcommand's own help."""
    parts = [
        "::\n\n  %tape SUBCOMMAND [ARGUMENTS ...] [--agent NAME]\n",
        "Inspect and manage the tape: "
        + ", ".join(SUBCOMMANDS)
        + ". Once the notebook has agents, "
        + ", ".join(ON_THE_HOLDERS_TAPE)
        + " act on the tape of the agent holding the conversation, or on agent NAME's with --agent NAME.\n",
        *(command.parser.format_help() for command in SUBCOMMANDS.values()),
    ]
    return "\n".join(parts)


Documented = TypeVar("Documented", bound=Callable[..., Any])


def with_tape_help(magic: Documented) -> Documented:
    """Give the ``%tape`` magic :func:`tape_help` as its docstring, so ``%tape?`` never goes stale."""
    magic.__doc__ = tape_help()
    return magic


def agent_option(words: list[str]) -> tuple[list[str], str | None]:
    """The words after the subcommand without ``--agent NAME``, and that name."""
    rest, agent = [], None
    words = words[1:]
    while words:
        word = words.pop(0)
        if word == "--agent" or word.startswith("--agent="):
            value = word.partition("=")[2] or (words.pop(0) if words else "")
            if not value:
                raise UsageError("--agent needs the NAME of one of the notebook's agents")
            agent = value
        else:
            rest.append(word)
    return rest, agent


def check_spans(name: str, words: list[str]) -> None:
    """A span that starts with ``-`` would pass for an option; say what an entry id is instead."""
    for word in words:
        if word[:1] == "-" and word[1:2].isdigit():
            raise UsageError(
                f"%tape {name} takes an entry id (7) or an inclusive range of ids (5-9), ids counting from 1; "
                f"got {word!r}"
            )
