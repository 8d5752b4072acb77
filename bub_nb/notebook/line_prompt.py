"""The ``%bub`` line form: options first, then the prompt exactly as typed (quotes, ``$`` and braces kept)."""

from __future__ import annotations

import io
import shlex

# Options of %bub that take a value; every other option is a flag.
VALUED_OPTIONS = frozenset({"-m", "--model", "--context", "-o", "--output", "--tools"})


def split_line_prompt(line: str) -> tuple[list[str], str]:
    """Split ``%bub`` line text into its option words and the raw prompt after them.

    Options are read like a shell line until the first word that does not start with ``-`` (or
    after ``--``); from there on the text is the prompt, untouched, so ``I'm`` or ``{"a": 1}`` stay
    as they are.
    """
    stream = io.StringIO(line)
    lexer = shlex.shlex(stream, posix=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
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
