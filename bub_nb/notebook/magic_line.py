"""Reading a magic's line: one shell-like tokenizer for every magic, and the ``%bub`` line form.

Words are split as a POSIX shell would (quotes group, ``#`` is an ordinary character). ``%bub``
reads its options that way and keeps the prompt after them exactly as typed.
"""

from __future__ import annotations

import io
import shlex
from typing import TextIO

from IPython.core.error import UsageError

# Options of %bub that take a value; every other option is a flag.
VALUED_OPTIONS = frozenset({"-m", "--model", "--context", "-o", "--output", "--tools"})


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


def split_line_prompt(line: str) -> tuple[list[str], str]:
    """Split ``%bub`` line text into its option words and the raw prompt after them.

    Options are read like a shell line until the first word that does not start with ``-`` (or
    after ``--``); from there on the text is the prompt, untouched, so ``I'm`` or ``{"a": 1}`` stay
    as they are.
    """
    try:
        return _options_then_prompt(line)
    except ValueError as exc:  # a quote that does not close inside the options
        raise UsageError(f"Cannot parse {line.strip()!r}: {exc}") from None


def _options_then_prompt(line: str) -> tuple[list[str], str]:
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
        if word in VALUED_OPTIONS:
            value = lexer.get_token()
            if value is not None:
                options.append(value)
