"""Exercises with checks: ``check(view, contains=..., excludes=...)`` passes, or fails with a hint."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bub_nb.context.view import View, build_view
from bub_nb.errors import BubNbError

if TYPE_CHECKING:
    from bub_nb.tape import Tape


class CheckFailed(BubNbError, AssertionError):
    """A check of an exercise did not pass; the message says what is missing or still there, and a hint."""


@dataclass(frozen=True, slots=True)
class CheckPassed:
    """A check that passed: what the view held and did not hold."""

    contains: tuple[str, ...]
    excludes: tuple[str, ...]

    def __str__(self) -> str:
        held = f"holds {_listed(self.contains)}" if self.contains else ""
        lacks = f"does not hold {_listed(self.excludes)}" if self.excludes else ""
        return f"Check passed: the view {' and '.join(part for part in (held, lacks) if part) or 'was built'}."

    def _repr_markdown_(self) -> str:
        return f"**{self}**"


def check(
    view: View | Tape,
    *,
    contains: str | Iterable[str] = (),
    excludes: str | Iterable[str] = (),
    hint: str | None = None,
) -> CheckPassed:
    """Check that the messages of ``view`` (a ``View``, or a tape: the view its next turn would send) hold
    every text of ``contains`` and none of ``excludes``.

    A failed check raises :class:`CheckFailed` naming each text that is missing or still there (with the entry
    that holds it), then ``hint``, or a hint of where to look when none is given.
    """
    built = view if isinstance(view, View) else build_view(view)
    wanted, unwanted = _texts(contains), _texts(excludes)
    if not wanted and not unwanted:
        raise CheckFailed("A check needs contains= or excludes=, the texts the view should or should not hold")
    missing = [text for text in wanted if _holder(built, text) is None]
    present = [(text, holder) for text in unwanted if (holder := _holder(built, text)) is not None]
    if not missing and not present:
        return CheckPassed(wanted, unwanted)
    problems = [f"the view should hold {text!r} and does not" for text in missing]
    problems += [f"the view should not hold {text!r}, and entry #{entry} does" for text, entry in present]
    start = f"anchor {built.anchor.name!r} (#{built.anchor.id})" if built.anchor is not None else "the tape's start"
    advice = hint or (
        f"The view [{built.mode}] starts at {start}; what came before it is not sent. "
        "Look with %context (or %context --diff full last) and hand off where the view should start."
    )
    raise CheckFailed(f"Not yet: {'; '.join(problems)}. Hint: {advice}")


def _texts(texts: str | Iterable[str]) -> tuple[str, ...]:
    return (texts,) if isinstance(texts, str) else tuple(texts)


def _holder(view: View, text: str) -> int | None:
    """The entry id of the first message of ``view`` whose content holds ``text`` (case-insensitive)."""
    needle = text.casefold()
    for index, message in enumerate(view.messages):
        content = message.get("content")
        if isinstance(content, str) and needle in content.casefold():
            return view.sources[index] if index < len(view.sources) else 0
    return None


def _listed(texts: tuple[str, ...]) -> str:
    return ", ".join(repr(text) for text in texts)
