"""Reading a magic's line: one shell-like tokenizer for every magic, the ``%bub`` line form, ``key=value`` state.

Words are split as a POSIX shell would (quotes group, ``#`` is an ordinary character). ``%bub``
reads its options that way and keeps the prompt after them exactly as typed; which options take a
value is read from the magic's own parser, so no second list of them exists.
"""

from __future__ import annotations

import argparse
import io
import shlex
from collections.abc import Callable
from typing import Any, TextIO

import orjson
from IPython.core.error import UsageError

from bub_nb.tape._lines import load_json


def _lexer(source: str | TextIO) -> shlex.shlex:
    lexer = shlex.shlex(source, posix=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    return lexer


def split_words(line: str) -> list[str]:
    """A magic line's words, shell quoting kept (``summary='two words'`` is one word); a ``UsageError`` if
    its quotes do not close."""
    try:
        return list(_lexer(line))
    except ValueError as exc:
        raise UsageError(f"Cannot parse {line.strip()!r}: {exc}") from None


def parser_of(magic: Callable[..., Any]) -> argparse.ArgumentParser:
    """The parser ``@magic_arguments`` built for a magic."""
    parser: argparse.ArgumentParser = magic.parser  # type: ignore[attr-defined]
    return parser


def parse_line(magic: Callable[..., Any], line: str) -> Any:
    """Parse a magic's arguments with shell quoting, so ``summary='two words'`` stays one value."""
    return parser_of(magic).parse_intermixed_args(split_words(line))


def takes_value(parser: argparse.ArgumentParser, word: str) -> bool:
    """Whether an option word reads the next word as its value, as ``parser`` would parse it: ``--budget``
    does, ``--no-stream`` and ``--budget=5`` do not, and an abbreviation (``--bud``) is its option's."""
    if not word.startswith("-") or "=" in word:
        return False
    actions = {option: action for action in parser._actions for option in action.option_strings}
    action = actions.get(word)
    if action is None and word.startswith("--") and parser.allow_abbrev:
        matches = {actions[option] for option in actions if option.startswith(word)}
        action = matches.pop() if len(matches) == 1 else None
    return action is not None and action.nargs != 0


def split_line_prompt(line: str, parser: argparse.ArgumentParser) -> tuple[list[str], str]:
    """Split ``%bub`` line text into its option words and the raw prompt after them.

    Options are read like a shell line until the first word that does not start with ``-`` and is
    not the value of the option before it (or after ``--``); from there on the text is the prompt,
    untouched, so ``I'm`` or ``{"a": 1}`` stay as they are.
    """
    try:
        return _options_then_prompt(line, parser)
    except ValueError as exc:  # a quote that does not close inside the options
        raise UsageError(f"Cannot parse {line.strip()!r}: {exc}") from None


def _options_then_prompt(line: str, parser: argparse.ArgumentParser) -> tuple[list[str], str]:
    stream = io.StringIO(line)
    lexer = _lexer(stream)
    options: list[str] = []
    while True:
        start = stream.tell()
        rest = line[start:].lstrip()
        if not rest.startswith("-"):
            return options, rest
        word = lexer.get_token()
        if word == "--":
            return options, line[stream.tell() :].lstrip()
        if word is None:
            return options, ""
        options.append(word)
        if takes_value(parser, word):
            value = lexer.get_token()
            if value is not None:
                options.append(value)


def parse_state(pairs: list[str], state_json: str | None) -> dict[str, Any]:
    """``key=value`` words (values read as JSON when they parse, else text) over an optional ``--state`` object."""
    state: dict[str, Any] = {}
    if state_json:
        try:
            loaded = load_json(state_json)  # exact: integers beyond 64 bits stay integers
        except ValueError as exc:
            raise UsageError(f"--state {state_json!r} is not valid JSON: {exc}") from None
        if not isinstance(loaded, dict):
            raise UsageError(f'--state {state_json!r} must be a JSON object, like \'{{"summary": "..."}}\'')
        state.update(loaded)
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if not equals or not key.isidentifier():
            raise UsageError(f"{pair!r} is not key=value (for example summary='what was done')")
        try:
            state[key] = orjson.loads(value) if not value.lstrip("-").isdigit() else int(value)
        except (orjson.JSONDecodeError, ValueError):
            state[key] = value
    return state
