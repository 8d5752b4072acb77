"""Context strategies: which entries of a tape a view is built from."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Protocol, runtime_checkable

from bub_nb.context.messages import Message, entry_message_count, render_entries, without_retracted
from bub_nb.errors import ContextError
from bub_nb.tape.entries import TapeEntry

if TYPE_CHECKING:
    from bub_nb.tape import AnchorSummary, Tape


@dataclass(frozen=True, slots=True)
class Selection:
    """The entries a strategy picked, oldest first.

    ``anchor`` is where the selection starts, when it starts at one. ``last`` keeps only that
    many messages from the end once the entries are rendered (what a window asks for).
    ``preamble`` holds messages the strategy wrote itself, each with the id of the entry it stands
    for, sent before the entries (the ``phases`` mode's earlier phases). They must be plain
    messages without tool calls, so the sequence stays valid for the API. ``recalled`` names the entries a
    recall mode brought back into the preamble, each with its score, and ``recalled_by`` what ranked them.
    """

    entries: tuple[TapeEntry, ...]
    anchor: AnchorSummary | None = None
    last: int | None = None
    preamble: tuple[tuple[Message, int], ...] = ()
    recalled: tuple[tuple[int, float], ...] = ()
    recalled_by: str = ""


@runtime_checkable
class ContextStrategy(Protocol):
    """Picks the entries a view is built from; :func:`bub_nb.context.build_view` renders them."""

    @property
    def label(self) -> str:
        """A short name for the mode, shown with the view (``last-anchor``, ``window:20``)."""
        ...

    def select(self, tape: Tape) -> Selection: ...


@dataclass(frozen=True, slots=True)
class LastAnchor:
    """From the last phase anchor on, the anchor included; the whole tape when it has none."""

    label: ClassVar[str] = "last-anchor"

    def select(self, tape: Tape) -> Selection:
        anchor = tape.last_anchor(phase=True)
        if anchor is None:
            return Selection(tuple(tape.read()))
        return Selection(tuple(tape.read(anchor.id)), anchor)


@dataclass(frozen=True, slots=True)
class NamedAnchor:
    """From the last occurrence of one anchor name on, the anchor included."""

    name: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ContextError(f"An anchor mode needs an anchor name, got {self.name!r}")

    @property
    def label(self) -> str:
        return f"anchor:{self.name}"

    def select(self, tape: Tape) -> Selection:
        anchor = tape.find_anchor(self.name)
        return Selection(tuple(tape.read(anchor.id)), anchor)


@dataclass(frozen=True, slots=True)
class FullTape:
    """Every entry of the tape."""

    label: ClassVar[str] = "full"

    def select(self, tape: Tape) -> Selection:
        return Selection(tuple(tape.read()))


@dataclass(frozen=True, slots=True)
class Window:
    """The last ``size`` messages, read backwards so a long tape costs no more than a short one."""

    size: int

    def __post_init__(self) -> None:
        if type(self.size) is not int or self.size < 1:
            raise ContextError(f"A window needs a positive number of messages, got {self.size!r}")

    @property
    def label(self) -> str:
        return f"window:{self.size}"

    def select(self, tape: Tape) -> Selection:
        newest_first = _read_back(tape.iter_reverse(), self.size)
        return Selection(tuple(reversed(newest_first)), last=self.size)


def _read_back(reverse: Iterator[TapeEntry], size: int) -> list[TapeEntry]:
    """Entries from the end until they render at least ``size`` messages, or the tape runs out."""
    newest_first: list[TapeEntry] = []
    wanted = size
    count = 0
    for entry in reverse:
        newest_first.append(entry)
        count += entry_message_count(entry)
        if count < wanted:
            continue
        # Unanswered calls and orphaned results render to nothing, so check the real count.
        # Retracted entries render to nothing too; the events that retract them were read first.
        if len(render_entries(without_retracted(reversed(newest_first))[0]).messages) >= size:
            break
        wanted = 2 * count
    return newest_first


FULL = FullTape()


def window(size: int) -> Window:
    """The view mode of the last ``size`` messages."""
    return Window(size)
