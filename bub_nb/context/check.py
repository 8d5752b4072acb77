"""Exercises with checks: ``check(view, contains=..., excludes=...)`` passes, or fails with a hint.

A check proves something only when it could fail, so it refuses what could not (an empty text, a text to exclude
that no entry of the tape holds) and counts only what a turn, a magic or a fork wrote: a message appended by hand
holds no answer. A named exercise (``exercise=``) checked on a tape records each attempt as an ``exercise.check``
event, which is how a teacher's class overview sees who passed what.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bub_nb.context.view import View, build_view
from bub_nb.errors import BubNbError
from bub_nb.markup import escape, markdown_html, markdown_text
from bub_nb.tape.events import EXERCISE_CHECK, written_by_hand
from bub_nb.tape.text import entry_text

if TYPE_CHECKING:
    from bub_nb.tape import Tape


class CheckFailed(BubNbError, AssertionError):
    """A check of an exercise did not pass; the message says what is missing or still there, and a hint."""


class CheckRefused(BubNbError, ValueError):
    """A check that could not fail (an empty text, a text to exclude that no entry holds): it would prove nothing."""


@dataclass(frozen=True, slots=True)
class CheckPassed:
    """A check that passed: what the view held and did not hold."""

    contains: tuple[str, ...]
    excludes: tuple[str, ...]
    starts_at: str | None = None

    def __str__(self) -> str:
        start = f"starts at {self.starts_at!r}" if self.starts_at else ""
        held = f"holds {_listed(self.contains)}" if self.contains else ""
        lacks = f"does not hold {_listed(self.excludes)}" if self.excludes else ""
        said = " and ".join(part for part in (start, held, lacks) if part) or "was built"
        return f"Check passed: the view {said}."

    def __bool__(self) -> bool:
        return True

    def _repr_html_(self) -> str:
        return f"<p><strong>{escape(self)}</strong></p>"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # the plain text a notebook keeps beside the HTML
        printer.text(str(self))


@dataclass(frozen=True, slots=True)
class NotDone:
    """A named exercise whose answer is still empty: shown as *not done yet* with its hint, without raising, so
    Run All goes on past an exercise nobody has done."""

    exercise: str
    hint: str

    def __str__(self) -> str:
        return f"Not done yet: exercise {self.exercise!r} has nothing to check. Hint: {self.hint}"

    def __bool__(self) -> bool:
        return False

    def _repr_html_(self) -> str:
        return markdown_html(
            f"**Not done yet** (exercise {markdown_text(repr(self.exercise))}): fill in the answer, then run the "
            f"cell. {markdown_text(self.hint)}"
        )

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))


def check(
    view: View | Tape,
    *,
    contains: str | Iterable[str] = (),
    excludes: str | Iterable[str] = (),
    hint: str | None = None,
    starts_at: str | None = None,
    exercise: str | None = None,
) -> CheckPassed | NotDone:
    """Check that the messages of ``view`` (a ``View``, or a tape: the view its next turn would send) hold
    every text of ``contains`` and none of ``excludes``, and with ``starts_at`` that the view starts at an anchor
    of that name written by ``%handoff`` or a turn (not by hand).

    A failed check raises :class:`CheckFailed` naming each text that is missing or still there (with the entry
    that holds it), then ``hint``, or a hint of where to look when none is given. A text a hand-appended entry
    holds does not count, and the message says so. A check that could not fail raises :class:`CheckRefused`.
    A named ``exercise`` with nothing to check yet returns :class:`NotDone`; on a tape, every attempt at a named
    exercise is recorded as an ``exercise.check`` event.
    """
    tape = None if isinstance(view, View) else view
    wanted, unwanted = _texts(contains, "contains"), _texts(excludes, "excludes")
    if not wanted and not unwanted and (exercise is not None or starts_at is None):
        if exercise is None:
            raise CheckFailed("A check needs contains= or excludes=, the texts the view should or should not hold")
        # An exercise's answer is its texts: where the view starts is asked of every answer, never the answer.
        done = NotDone(exercise, hint or "Look at the view with %context, then say what it holds and lacks.")
        _record(tape, exercise, {"passed": False, "done": False})
        return done
    if tape is not None:
        _refuse_vacuous(tape, unwanted)
    built = view if isinstance(view, View) else build_view(view)
    by_hand = set(built.by_hand)
    missing, pasted = [], []
    for text in wanted:
        holder = _holder(built, text, by_hand)
        if holder is None:
            missing.append(text)
            if (hand := _holder(built, text)) is not None:
                pasted.append((text, hand))
    present = [(text, holder) for text in unwanted if (holder := _holder(built, text)) is not None]
    start_problem = _start_problem(tape, built, starts_at)
    if not missing and not present and start_problem is None:
        _record(tape, exercise, {"passed": True, "done": True})
        return CheckPassed(wanted, unwanted, starts_at)
    problems = [start_problem] if start_problem else []
    problems += [f"the view should hold {text!r} and does not" for text in missing]
    problems += [
        f"entry #{entry} holds {text!r} but was appended by hand, not written by a turn or a magic: it does not count"
        for text, entry in pasted
    ]
    problems += [f"the view should not hold {text!r}, and entry #{entry} does" for text, entry in present]
    start = f"anchor {built.anchor.name!r} (#{built.anchor.id})" if built.anchor is not None else "the tape's start"
    advice = hint or (
        f"The view [{built.mode}] starts at {start}; what came before it is not sent. "
        "Look with %context (or %context --diff full last) and hand off where the view should start."
    )
    _record(tape, exercise, {"passed": False, "done": True, "problems": problems})
    raise CheckFailed(f"Not yet: {'; '.join(problems)}. Hint: {advice}")


def _texts(texts: str | Iterable[str], name: str) -> tuple[str, ...]:
    found = (texts,) if isinstance(texts, str) else tuple(texts)
    empty = [text for text in found if not isinstance(text, str) or not text.strip()]
    if empty:
        raise CheckRefused(f"{name}={empty[0]!r} is no text to look for: every view holds the empty text")
    return found


def _refuse_vacuous(tape: Tape, unwanted: tuple[str, ...]) -> None:
    """Refuse a text to exclude that no entry of ``tape`` holds: the view could never hold it, so excluding it
    proves nothing."""
    if not unwanted:
        return
    texts = [entry_text(entry).casefold() for entry in tape.read()]
    for entry in tape.anchors(limit=None):
        texts.append(str(entry.state or "").casefold())
    for text in unwanted:
        if not any(text.casefold() in held for held in texts):
            raise CheckRefused(
                f"excludes={text!r} is on no entry of tape {tape.name!r}, so no view could hold it: "
                "the check would pass whatever was done"
            )


def _start_problem(tape: Tape | None, view: View, starts_at: str | None) -> str | None:
    if starts_at is None:
        return None
    anchor = view.anchor
    if anchor is None or anchor.name != starts_at:
        where = f"at anchor {anchor.name!r} (#{anchor.id})" if anchor is not None else "at the tape's start"
        return f"the view should start at anchor {starts_at!r}, and starts {where}"
    if tape is not None:
        [entry] = tape.read(anchor.id, anchor.id + 1)
        if written_by_hand(entry):
            return f"anchor {starts_at!r} (#{anchor.id}) was appended by hand, not by %handoff: it does not count"
    return None


def _record(tape: Tape | None, exercise: str | None, data: Mapping[str, Any]) -> None:
    if tape is not None and exercise is not None:
        tape.append_event(EXERCISE_CHECK, {"exercise": exercise, **data}, source="check")


def _holder(view: View, text: str, skipped: set[int] | None = None) -> int | None:
    """The entry id of the first message of ``view`` whose content holds ``text`` (case-insensitive), leaving out
    the entries in ``skipped``."""
    needle = text.casefold()
    for index, message in enumerate(view.messages):
        content = message.get("content")
        source = view.sources[index] if index < len(view.sources) else 0
        if skipped and source in skipped:
            continue
        if isinstance(content, str) and needle in content.casefold():
            return source
    return None


def _listed(texts: tuple[str, ...]) -> str:
    return ", ".join(repr(text) for text in texts)
