"""Recall by the prompt: the earlier entries most relevant to this turn's prompt, added to a phase view.

The ``recall`` mode is the ``phases`` view (every earlier phase's summary, then the current phase) and
``last+recall`` the ``last-anchor`` view, each with the entries before the current phase that rank highest for
the turn's prompt, inside a token budget (``recall:N`` and ``last+recall:N`` set it; :data:`RECALL_TOKENS` by
default). The prompt is the newest user message of the current phase (what a turn has just recorded), or the
one given to :func:`~bub_nb.context.build_view` (``prompt=``).

Ranking is BM25 (``bm25s``: offline, no model) over each entry's readable text; a :class:`Ranker` of one's own
may take its place, and an :class:`EntryRanker` is given the entries too, so it can keep what it worked out for
each (an entry never changes): the agent's embeddings through an endpoint's ``/v1/embeddings`` are one
(:mod:`bub_nb.agent.models.embeddings`). Each recalled entry becomes one
plain assistant message that says what it is (``[Recalled #12 (score 3.41), user:] ...``), in tape order after
the earlier phases and before the current phase, so the sequence stays valid for the API: tool calls and their
results are recalled as text, never as a call whose answer is missing. Retracted entries, entries hidden from the
context and entries holding a redaction marker never come back this way.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final, Protocol, runtime_checkable

from bub_nb.context.messages import Message, is_hidden, without_retracted
from bub_nb.context.phases import PHASES
from bub_nb.context.strategies import ContextStrategy, LastAnchor, Selection
from bub_nb.context.tokens import count_message_tokens
from bub_nb.tape.text import entry_role, entry_text

if TYPE_CHECKING:
    from bub_nb.tape import Tape
    from bub_nb.tape.entries import TapeEntry

RECALL_TOKENS: Final = 1024
"""The tokens recalled entries may take when a mode names no budget."""
RECALLED: Final = "[Recalled #"
"""How a recalled entry's message opens: ``[Recalled #12 (score 3.41), user:]``."""
ENTRY_CHARS: Final = 1200
"""The longest text one recalled entry brings (a long tool result is cut, saying so)."""
_KINDS: Final = ("message", "tool_call", "tool_result")
_REDACTED: Final = re.compile(r"\[redacted sha256:[0-9a-f]{64}\]")


class Ranker(Protocol):
    """Scores texts for a query: higher is more relevant, zero or less is not relevant at all."""

    def scores(self, query: str, texts: Sequence[str]) -> list[float]: ...


@runtime_checkable
class EntryRanker(Protocol):
    """Scores a tape's entries for a query (``texts`` are their readable texts, aligned): higher is more relevant,
    zero or less not relevant. It says what ranked them, which may be another ranker it fell back on."""

    def rank(
        self, query: str, tape: str, entries: Sequence[TapeEntry], texts: Sequence[str]
    ) -> tuple[list[float], str]: ...


def ranker_label(ranker: object) -> str:
    """What a ranker is called where a view names it: its ``label``, else its class's name."""
    return str(getattr(ranker, "label", "") or type(ranker).__name__.lower())


class Bm25:
    """BM25 over the texts (``bm25s``, English stop words left out), its index kept for texts seen last."""

    label: Final = "bm25"

    def __init__(self, cached: int = 8) -> None:
        self._cache: OrderedDict[int, Any] = OrderedDict()
        self._cached = cached

    def scores(self, query: str, texts: Sequence[str]) -> list[float]:
        import bm25s

        if not texts:
            return []
        query_tokens = bm25s.tokenize([query], stopwords="en", return_ids=False, show_progress=False)[0]
        if not query_tokens:
            return [0.0] * len(texts)
        key = hash(tuple(texts))
        retriever = self._cache.get(key)
        if retriever is None:
            retriever = bm25s.BM25()
            retriever.index(bm25s.tokenize(list(texts), stopwords="en", show_progress=False), show_progress=False)
            self._cache[key] = retriever
            while len(self._cache) > self._cached:
                self._cache.popitem(last=False)
        self._cache.move_to_end(key)
        known = [token for token in query_tokens if token in retriever.vocab_dict]
        return [float(score) for score in retriever.get_scores(known)] if known else [0.0] * len(texts)


BM25: Final = Bm25()


@dataclass(frozen=True, slots=True)
class Recall:
    """``base``'s view (the ``phases`` view or the ``last-anchor`` one) and the earlier entries that rank highest
    for ``prompt`` (``None``: the newest user message of the current phase), taking at most ``budget`` tokens."""

    base: ContextStrategy = PHASES
    budget: int = RECALL_TOKENS
    prompt: str | None = None
    ranker: Ranker | EntryRanker = BM25

    @property
    def label(self) -> str:
        word = "last+recall" if isinstance(self.base, LastAnchor) else "recall"
        return word if self.budget == RECALL_TOKENS else f"{word}:{self.budget}"

    def for_prompt(self, prompt: str | None) -> Recall:
        """The same mode, recalling for ``prompt``."""
        return replace(self, prompt=prompt)

    def select(self, tape: Tape) -> Selection:
        chosen = self.base.select(tape)
        if chosen.anchor is None:
            return chosen  # no earlier phase: the whole tape is sent already
        prompt = self.prompt if self.prompt is not None else newest_prompt(chosen.entries)
        if not prompt or not prompt.strip():
            return chosen
        candidates = earlier_entries(tape, chosen.anchor.id)
        texts = [entry_text(entry) for entry in candidates]
        if isinstance(self.ranker, EntryRanker):
            scores, ranked_by = self.ranker.rank(prompt, tape.name, candidates, texts)
        else:
            scores, ranked_by = self.ranker.scores(prompt, texts), ranker_label(self.ranker)
        ranked = sorted(
            ((score, entry) for score, entry in zip(scores, candidates, strict=True)),
            key=lambda pair: (-pair[0], -pair[1].id),
        )
        picked: list[tuple[TapeEntry, float, Message]] = []
        used = 0
        for score, entry in ranked:
            if score <= 0:
                break
            message = recalled_message(entry, score)
            cost = count_message_tokens(message)
            if used + cost > self.budget:
                continue  # a shorter one further down may still fit
            picked.append((entry, score, message))
            used += cost
        picked.sort(key=lambda found: found[0].id)
        recalled = tuple((message, entry.id) for entry, _, message in picked)
        picked_scores = tuple((entry.id, round(score, 3)) for entry, score, _ in picked)
        return replace(chosen, preamble=(*chosen.preamble, *recalled), recalled=picked_scores, recalled_by=ranked_by)


def newest_prompt(entries: Sequence[TapeEntry]) -> str:
    """The text of the newest user message among ``entries``, or ``""``."""
    for entry in reversed(entries):
        if entry.kind == "message" and entry.payload.get("role") == "user":
            return entry_text(entry)
    return ""


def earlier_entries(tape: Tape, before: int) -> list[TapeEntry]:
    """The entries before ``before`` that recall may bring back: messages, calls and results with text, none
    retracted (by any retraction on the tape), hidden from the context or redacted."""
    kept, _ = without_retracted(tape.read())  # the retractions may come after the phase
    return [
        entry
        for entry in kept
        if entry.id < before
        and entry.kind in _KINDS
        and not is_hidden(entry)
        and (text := entry_text(entry)).strip()
        and not _REDACTED.search(text)
        and not _REDACTED.search(str(entry.meta))
    ]


def recalled_message(entry: TapeEntry, score: float) -> Message:
    """The plain message a recalled entry becomes, saying its id, its score and who said it."""
    text = entry_text(entry)
    if len(text) > ENTRY_CHARS:
        text = text[: ENTRY_CHARS - 1] + "… (cut; the tape keeps all of it)"
    who = {"tool_call": "tool call", "tool_result": "tool result"}.get(entry.kind) or entry_role(entry) or entry.kind
    return {"role": "assistant", "content": f"{RECALLED}{entry.id} (score {score:.2f}), {who}:] {text}"}


def with_prompt(strategy: ContextStrategy, prompt: str | None) -> ContextStrategy:
    """``strategy`` recalling for ``prompt`` when it recalls; any other strategy as it is."""
    return strategy.for_prompt(prompt) if isinstance(strategy, Recall) and prompt is not None else strategy


def parse_recall(word: str) -> Recall | None:
    """``recall[:N]``, ``phases+recall[:N]`` or ``last+recall[:N]`` as a mode, else ``None``."""
    name, _, budget = word.partition(":")
    bases: dict[str, ContextStrategy] = {"recall": PHASES, "phases+recall": PHASES, "last+recall": LastAnchor()}
    base = bases.get(name.strip())
    if base is None:
        return None
    budget = budget.strip()
    if budget and not (budget.isascii() and budget.isdigit() and int(budget) > 0):
        from bub_nb.errors import ContextError

        raise ContextError(f"Context mode {word!r} needs a positive token budget, as in 'last+recall:1500'")
    return Recall(base, int(budget) if budget else RECALL_TOKENS)
