"""The view: what the model receives, built fresh from a tape on every turn, and the modes a caller may ask for it
in (a sentinel, a strategy, text), each turned into a strategy."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from bub_nb.context.cells import NotebookCells
from bub_nb.context.display import view_html, view_markdown, view_text
from bub_nb.context.messages import Message, render_entries, without_refused_prompts, without_retracted
from bub_nb.context.phases import PHASES
from bub_nb.context.recall import parse_recall, with_prompt
from bub_nb.context.strategies import FULL, ContextStrategy, LastAnchor, NamedAnchor, Selection, Window
from bub_nb.context.tokens import REPLY_PRIMING, count_message_tokens, tokenizer_name
from bub_nb.errors import ContextError
from bub_nb.markup import clean_html
from bub_nb.tape.anchors import LAST_ANCHOR, _LastAnchor
from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.events import RUN, run_data, run_usage, run_view, written_by_hand

if TYPE_CHECKING:
    from bub_nb.tape import AnchorSummary, Tape


@dataclass(frozen=True, slots=True)
class RunUsage:
    """The token usage an endpoint reported for one turn, read from its ``run`` event."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    model: str | None
    entry_id: int
    sent_mode: str | None = None
    """The view mode the turn's request was built with, as its run event recorded it (``None``: not recorded)."""
    sent_anchor: int | None = None
    """The id of the anchor that view started at."""
    cached_tokens: int = 0
    """Of ``prompt_tokens``, those the endpoint read from its cache."""
    reasoning_tokens: int = 0
    """Of ``completion_tokens``, those the model spent reasoning."""

    def parts(self) -> str:
        """The prompt and completion counts as a line says them, with the cached and reasoning parts when there are."""
        prompt = f"prompt {self.prompt_tokens}" + (f" ({self.cached_tokens} cached)" if self.cached_tokens else "")
        completion = f"completion {self.completion_tokens}" + (
            f" ({self.reasoning_tokens} reasoning)" if self.reasoning_tokens else ""
        )
        return f"{prompt} + {completion}"

    def sent_with(self, view: View) -> bool:
        """Whether the turn's request was built as ``view`` is: the same mode from the same anchor."""
        anchor = view.anchor.id if view.anchor is not None else None
        return self.sent_mode == view.mode and self.sent_anchor == anchor


@dataclass(frozen=True, slots=True)
class View:
    """The messages a model will see, with where each came from and what it costs.

    ``tokens`` is an offline estimate per message, aligned with ``messages``; ``total_tokens``
    is the whole prompt's estimate (every message plus the reply priming). ``usage`` is what
    the endpoint itself reported for the last turn inside this view, when there was one.
    ``sources`` gives the entry id of each message; ``dropped`` lists entries whose messages
    (some or all) were left out to keep the sequence valid for the API. ``tape`` names the tape its ids are of.
    """

    messages: tuple[Message, ...]
    entry_ids: tuple[int, ...]
    anchor: AnchorSummary | None
    tokens: tuple[int, ...]
    total_tokens: int
    mode: str
    usage: RunUsage | None = None
    sources: tuple[int, ...] = ()
    dropped: tuple[int, ...] = ()
    tokenizer: str = "heuristic"
    retracted: tuple[int, ...] = ()
    """Entries of the selection left out because a ``retract`` event took them back."""
    by_hand: tuple[int, ...] = field(default=(), compare=False)
    """Entries of the view that no turn, magic or fork wrote: appended by hand (an exercise's check ignores them)."""
    recalled: tuple[tuple[int, float], ...] = ()
    """The entries a recall mode brought back for the prompt, each with its score (they are in ``sources``)."""
    recalled_by: str = field(default="", compare=False)
    """What ranked them: ``bm25``, or ``embeddings <model>`` (``bm25`` again when the endpoint failed)."""
    tape: str = field(default="", compare=False)
    """The tape the view was built from (``""`` when a strategy built it some other way); two views of the same
    entries compare equal whichever tape holds them."""

    def to_messages(self) -> list[Message]:
        """Fresh copies of the messages, safe to extend and send."""
        return copy.deepcopy(list(self.messages))

    def to_text(self) -> str:
        return view_text(self)

    def __str__(self) -> str:
        return self.to_text()

    def to_markdown(self) -> str:
        return view_markdown(self)

    def _repr_html_(self) -> str:
        return clean_html(view_html(self))


def build_view(tape: Tape, mode: Mode = LAST_ANCHOR, *, prompt: str | None = None) -> View:
    """Build the view of ``tape`` for ``mode``: ``LAST_ANCHOR``, an anchor name, ``None`` (the full
    tape), ``window(n)`` or any :class:`~bub_nb.context.ContextStrategy`. A recall mode recalls for ``prompt``
    when it is given (else for the newest user message of the current phase)."""
    strategy = with_prompt(as_strategy(mode), prompt)
    return replace(view_from_selection(strategy.select(tape), strategy.label), tape=tape.name)


def view_from_selection(selection: Selection, mode: str = "custom") -> View:
    """Render a selection into a view; strategies that pick entries their own way end here too."""
    kept, retracted = without_retracted(selection.entries)
    rendering = render_entries(without_refused_prompts(kept))
    messages, sources, dropped = rendering.messages, rendering.sources, list(rendering.dropped)
    if selection.preamble:
        messages = tuple(message for message, _ in selection.preamble) + messages
        sources = tuple(source for _, source in selection.preamble) + sources
    if selection.last is not None and len(messages) > selection.last:
        cut = len(messages) - selection.last
        # A cut inside a call's answers would orphan them; the answers go with the call.
        while cut < len(messages) and messages[cut].get("role") == "tool":
            dropped.append(sources[cut])
            cut += 1
        messages, sources = messages[cut:], sources[cut:]
    tokens = tuple(count_message_tokens(message) for message in messages)
    sent = set(sources)
    return View(
        messages=messages,
        entry_ids=tuple(dict.fromkeys(sources)),
        anchor=selection.anchor,
        tokens=tokens,
        total_tokens=REPLY_PRIMING + sum(tokens),
        mode=mode,
        usage=last_run_usage(selection.entries),
        sources=sources,
        dropped=tuple(dict.fromkeys(dropped)),
        tokenizer=tokenizer_name(),
        retracted=retracted,
        recalled=selection.recalled,
        recalled_by=selection.recalled_by,
        by_hand=tuple(entry.id for entry in kept if written_by_hand(entry) and entry.id in sent),
    )


def last_run_usage(entries: Iterable[TapeEntry]) -> RunUsage | None:
    """The usage of the newest ``run`` event among ``entries`` that reported one."""
    for entry in reversed(list(entries)):
        if entry.kind != "event" or entry.name != RUN:
            continue
        usage = _usage(entry)
        if usage is not None:
            return usage
    return None


def _usage(entry: TapeEntry) -> RunUsage | None:
    reported = run_usage(entry)
    if reported is None:
        return None
    prompt, completion = reported.get("prompt_tokens"), reported.get("completion_tokens")
    if not isinstance(prompt, int) or not isinstance(completion, int):
        return None
    total = reported.get("total_tokens")
    model = (run_data(entry) or {}).get("model")
    recorded = run_view(entry)
    return RunUsage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=total if isinstance(total, int) else prompt + completion,
        model=model if isinstance(model, str) else None,
        entry_id=entry.id,
        sent_mode=recorded.mode if recorded is not None else None,
        sent_anchor=recorded.anchor if recorded is not None else None,
        cached_tokens=_detail(reported, "prompt_tokens_details", "cached_tokens"),
        reasoning_tokens=_detail(reported, "completion_tokens_details", "reasoning_tokens"),
    )


def _detail(usage: dict[str, Any], group: str, name: str) -> int:
    details = usage.get(group)
    value = details.get(name) if isinstance(details, dict) else None
    return value if type(value) is int else 0


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
