"""Text search by bytes first: only the lines that could hold every word of a query are decoded.

An entry's readable text (``bub_nb.tape.text``) is made of the strings its line holds, joined by
separators, and of values written out again (numbers, ``None``, nested objects). So every run of
ASCII letters and digits of a query that an entry's text contains, lower-cased, is also in the
lower-cased line, with these exceptions, which the prefilter never relies on:

- a word a value written out again may spell differently from the line: a number (``1E2`` is
  ``100.0``), ``None``/``null``/``nan``/``infinity``, and the ``x…``/``u…`` of an escape in a repr;
- a line that spells an ASCII letter or digit as a ``\\u`` escape, or holds one of the two non-ASCII
  characters whose lower case is ASCII (``İ`` and the Kelvin sign): such lines are always decoded.

Every line that passes is decoded and checked against the query as before, so results are exactly
what decoding every line gives.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"[a-z0-9]+")
_ESCAPE_WORD = re.compile(r"[xu][0-9a-f]*")
_NUMBER_CHARS = frozenset("0123456789e")
_SPELLED_AGAIN = ("none", "null", "nan", "infinity")
_ESCAPED = re.compile(rb"\\u(?:00[2-7][0-9a-fA-F]|0130|212[aA])")
_BACKSLASH, _U, _FIRST_HEX = ord("\\"), ord("u"), (ord("0"), ord("2"))
_LOWERS_TO_ASCII = ("İ".encode(), "\u212a".encode())  # the only characters whose lower case is ASCII


def needles(query: str) -> list[bytes]:
    """The words a line must hold to possibly match ``query``, longest first (none: decode every line)."""
    text = query.lower()
    if not text.isascii():
        return []
    words = {word for word in _WORD.findall(text) if not _spelled_again(word)}
    return sorted((word.encode() for word in words), key=len, reverse=True)


def _spelled_again(word: str) -> bool:
    return (
        set(word) <= _NUMBER_CHARS
        or _ESCAPE_WORD.fullmatch(word) is not None
        or any(word in spelled for spelled in _SPELLED_AGAIN)
    )


def candidate_lines(block: bytes, words: list[bytes]) -> list[tuple[int, int]]:
    """``(start, end)`` of the lines of ``block`` (split on line breaks) that may match, in file order."""
    lower = block.lower()
    spans = set()
    first, rest = words[0], words[1:]
    at = lower.find(first)
    while at >= 0:
        start = lower.rfind(b"\n", 0, at) + 1
        end = lower.find(b"\n", at)
        end = len(lower) if end < 0 else end
        line = lower[start:end]
        if all(word in line for word in rest):
            spans.add((start, end))
        at = lower.find(first, end)
    for at in _hidden(block):
        end = block.find(b"\n", at)
        spans.add((block.rfind(b"\n", 0, at) + 1, len(block) if end < 0 else end))
    return sorted(spans)


def _hidden(block: bytes) -> list[int]:
    """Where ``block`` spells a letter or digit in a way its lower-cased bytes do not show."""
    import numpy as np  # finding a two-byte pattern whose first byte is common is far faster vectorised

    padded = np.frombuffer(block + b"\0\0", np.uint8)
    slashes = np.flatnonzero(padded[:-2] == _BACKSLASH)
    escapes = slashes[(padded[slashes + 1] == _U) & np.isin(padded[slashes + 2], _FIRST_HEX)]
    found = [int(at) for at in escapes if _ESCAPED.match(block, int(at))]
    if not block.isascii():
        for spelling in _LOWERS_TO_ASCII:
            at = block.find(spelling)
            while at >= 0:
                found.append(at)
                at = block.find(spelling, at + 1)
    return found
