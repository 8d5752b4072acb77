"""View modes: what a caller may pass for a view (a sentinel, a strategy, text) and how each becomes a strategy."""

from __future__ import annotations

from bub_nb.context.cells import NotebookCells
from bub_nb.context.phases import PHASES
from bub_nb.context.recall import parse_recall
from bub_nb.context.strategies import FULL, ContextStrategy, LastAnchor, NamedAnchor, Window
from bub_nb.errors import ContextError
from bub_nb.tape.anchors import LAST_ANCHOR, _LastAnchor

#: What a view mode may be: the ``LAST_ANCHOR`` sentinel, ``None`` (the full tape), a strategy, or text
#: (a mode word or an anchor name).
Mode = ContextStrategy | str | _LastAnchor | None

_LAST = LastAnchor()


def as_strategy(mode: Mode) -> ContextStrategy:
    """Turn a view mode into a strategy.

    ``LAST_ANCHOR`` (the tape layer's sentinel, re-exported here) is :class:`LastAnchor`, ``None``
    is the full tape, a strategy stays as it is, and text is read by :func:`parse_mode`, the same
    words the magics take (``full``, ``phases``, ``window:3``, ``anchor:<name>`` or an anchor name).
    """
    if mode is LAST_ANCHOR:
        return _LAST
    if mode is None:
        return FULL
    if isinstance(mode, str):
        return parse_mode(mode)
    if isinstance(mode, ContextStrategy):
        return mode
    raise ContextError(
        f"Context mode {mode!r} is not a strategy, an anchor name or None; "
        "use LAST_ANCHOR, window(n), an anchor name or None"
    )


_LAST_WORDS = frozenset({"last", "last-anchor", "last_anchor"})
_FULL_WORDS = frozenset({"full", "all", "none"})


def parse_mode(text: str) -> ContextStrategy:
    """Read a mode as people type it: ``last``, ``full``, ``phases``, ``recall[:N]``, ``last+recall[:N]``,
    ``window:20``, ``notebook[:N]``, ``anchor:<name>`` or ``<name>``.

    The ``anchor:`` prefix reaches anchors whose names are also mode words.
    """
    if not isinstance(text, str):
        raise ContextError(f"Context mode {text!r} is not text")
    spelled = text.strip()
    word = spelled.lower()
    if not spelled:
        raise ContextError(f"Context mode {text!r} is empty; use last, full, phases, window:N or an anchor name")
    if word in _LAST_WORDS:
        return _LAST
    if word in _FULL_WORDS:
        return FULL
    if word == "phases":
        return PHASES
    if (recall := parse_recall(word)) is not None:
        return recall
    if word.startswith("window:") or word == "window":
        count = word.partition(":")[2].strip()
        if not (count.isascii() and count.isdigit()) or int(count) < 1:
            raise ContextError(f"Context mode {text!r} needs a positive message count, as in 'window:20'")
        return Window(int(count))
    if word == "notebook" or word.startswith("notebook:"):
        count = word.partition(":")[2].strip() or "10"
        if not (count.isascii() and count.isdigit()) or int(count) < 1:
            raise ContextError(f"Context mode {text!r} needs a positive cell count, as in 'notebook:5'")
        return NotebookCells(int(count))
    if word.startswith("anchor:"):
        return NamedAnchor(spelled.partition(":")[2].strip())
    return NamedAnchor(spelled)
