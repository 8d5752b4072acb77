"""The subcommands of a line magic (``%tape``, ``%mcp``, ``%lesson``): one registry per magic that parsing,
dispatch, the one-line errors and the magic's help (``%tape?``) all read, so none of them can go stale.

Each subcommand is an argparse parser, which checks its arguments and writes its own usage and help, and a
handler that takes the commands object the magic runs on and the parsed arguments.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from IPython.core.error import UsageError
from IPython.core.magic_arguments import MagicArgumentParser

Handler = Callable[[Any, argparse.Namespace], Any]
"""A subcommand's handler: it takes the commands object that runs it and the parsed arguments."""

Documented = TypeVar("Documented", bound=Callable[..., Any])


def arg(*flags: str, **options: Any) -> tuple[tuple[str, ...], dict[str, Any]]:
    """One argument of a subcommand, as ``ArgumentParser.add_argument`` takes it."""
    return flags, options


@dataclass(frozen=True)
class Subcommand:
    """One subcommand: its parser (which also writes its usage and help) and what it does."""

    name: str
    parser: MagicArgumentParser
    handler: Handler

    @property
    def usage(self) -> str:
        """How it is typed, from its parser: ``%lesson start NAME``."""
        text = " ".join(self.parser.format_usage().split()).removeprefix(":: ").removeprefix("usage: ")
        return text if text.startswith("%") else f"%{text}"


class Subcommands:
    """The subcommands of the line magic ``%<magic>``, in the order its help lists them.

    ``default`` is the subcommand a bare ``%<magic>`` runs (``%mcp`` lists the servers); without one, a bare
    magic says which subcommands there are.
    """

    def __init__(self, magic: str, summary: str, *, options: str = "", default: str | None = None) -> None:
        self.magic = magic
        self.summary = summary
        self.options = options
        self.default = default
        self.commands: dict[str, Subcommand] = {}

    def add(
        self, name: str, description: str, *arguments: tuple[tuple[str, ...], dict[str, Any]], usage: str | None = None
    ) -> Callable[[Handler], Handler]:
        """Register a handler as ``%<magic> NAME`` with its arguments (each ``arg(...)``); ``usage`` replaces the
        usage line argparse would write, for a form it cannot say (``-- COMMAND [ARGS ...]``)."""
        # IPython's help formatter writes the "%" before the name itself.
        prog = f"{self.magic} {name}"
        parser = MagicArgumentParser(prog=prog, description=description, add_help=False, usage=usage)
        for flags, options in arguments:
            parser.add_argument(*flags, **options)

        def register(handler: Handler) -> Handler:
            self.commands[name] = Subcommand(name, parser, handler)
            return handler

        return register

    @property
    def names(self) -> str:
        return ", ".join(self.commands)

    def choose(self, words: list[str]) -> tuple[Subcommand, list[str]]:
        """The subcommand ``words`` name and the words after it; an unknown or missing one is a ``UsageError``."""
        if not words:
            if self.default is None:
                raise UsageError(f"%{self.magic} needs a subcommand: {self._choices()} (see %{self.magic}?)")
            return self.commands[self.default], []
        command = self.commands.get(words[0])
        if command is None:
            raise UsageError(f"Unknown %{self.magic} subcommand {words[0]!r}; use one of: {self._choices()}")
        return command, words[1:]

    def parse(self, command: Subcommand, words: list[str]) -> argparse.Namespace:
        """``words`` parsed by ``command``'s parser; an argument it refuses is a ``UsageError`` that ends with
        how the subcommand is typed."""
        try:
            return command.parser.parse_intermixed_args(words)
        except UsageError as refused:
            raise UsageError(f"{refused}; usage: {command.usage}") from None

    def run(self, commands: Any, words: list[str]) -> Any:
        """Choose the subcommand ``words`` name, parse the rest and run its handler on ``commands``."""
        command, rest = self.choose(words)
        return command.handler(commands, self.parse(command, rest))

    def _choices(self) -> str:
        # A few subcommands are said with their usage, so the error alone shows how to type one; many, by name.
        if len(self.commands) <= 3:
            return " | ".join(command.usage for command in self.commands.values())
        return self.names

    def help(self) -> str:
        """The magic's help: its form, what it does, then each subcommand's own help."""
        form = f"%{self.magic} SUBCOMMAND [ARGUMENTS ...]{' ' + self.options if self.options else ''}"
        parts = [
            f"::\n\n  {form}\n",
            f"{self.summary} Subcommands: {self.names}.\n",
            *(command.parser.format_help() for command in self.commands.values()),
        ]
        return "\n".join(parts)

    def documented(self, magic: Documented) -> Documented:
        """Give the magic :meth:`help` as its docstring, so ``%<magic>?`` lists what the registry holds."""
        magic.__doc__ = self.help()
        return magic
