"""Context diffs: what changes between two views, entry by entry and token by token."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from bub_nb.context.messages import Message
from bub_nb.context.tokens import REPLY_PRIMING, count_text_tokens
from bub_nb.context.turns import TurnView, parse_run, view_of_turn
from bub_nb.context.view import View, build_view, parse_mode
from bub_nb.errors import ContextError
from bub_nb.markup import clean_html, markdown_text
from bub_nb.tape.events import id_ranges

if TYPE_CHECKING:
    from bub_nb.tape import Tape

#: The sources a view's tokens come from, in the order diffs list them.
SOURCES: Final = ("system prompt", "memory block", "anchor state", "messages", "tool results", "reply priming")

_ANCHOR_PREFIX: Final = "[Anchor created: "


@dataclass(frozen=True, slots=True)
class ContextDiff:
    """How view ``b`` differs from view ``a``: entries that ``entered`` (in ``b`` only), ``left`` (in ``a``
    only) and ``stayed`` (in both), and the tokens each source costs on either side.

    ``tokens_a`` and ``tokens_b`` map every name of :data:`SOURCES` to a token estimate. A view built
    from a mode carries no system prompt, so its system prompt and memory block count 0; a recorded
    turn's view (:func:`bub_nb.context.view_of_turn`) carries both.
    """

    a: str
    b: str
    entered: tuple[int, ...]
    left: tuple[int, ...]
    stayed: tuple[int, ...]
    tokens_a: dict[str, int]
    tokens_b: dict[str, int]
    a_ids: tuple[int, ...] = ()
    b_ids: tuple[int, ...] = ()
    cited: tuple[int, ...] = ()
    """Across two agents' tapes: entries of ``a``'s tape that ``b``'s handoff anchor names by ``tape://`` reference."""
    agents: tuple[str, str] | None = None
    """Across two agents' tapes: the agents whose views ``a`` and ``b`` are."""
    retracted: tuple[int, ...] = ()
    """The entries that ``left`` because a retraction took them back."""

    @property
    def token_change(self) -> dict[str, int]:
        """Tokens of ``b`` minus tokens of ``a``, per source."""
        return {source: self.tokens_b[source] - self.tokens_a[source] for source in SOURCES}

    @property
    def total_a(self) -> int:
        return sum(self.tokens_a.values())

    @property
    def total_b(self) -> int:
        return sum(self.tokens_b.values())

    @property
    def summary(self) -> str:
        change = self.total_b - self.total_a
        cited = ""
        if self.agents is not None:
            cited = f"; {self.agents[1]} cites {len(self.cited)} entries of {self.agents[0]}'s tape by reference"
        retracted = f" ({len(self.retracted)} retracted)" if self.retracted else ""
        return (
            f"Context diff {self.a} → {self.b}: {len(self.entered)} entered, {len(self.left)} left{retracted}, "
            f"{len(self.stayed)} stayed; {change:+d} tokens{cited}"
        )

    def _rows(self) -> list[tuple[str, int, int, int]]:
        change = self.token_change
        rows = [(source, self.tokens_a[source], self.tokens_b[source], change[source]) for source in SOURCES]
        rows.append(("total", self.total_a, self.total_b, self.total_b - self.total_a))
        return rows

    def to_text(self) -> str:
        lines = [self.summary]
        for name, ids in (("entered", self.entered), ("left", self.left), ("stayed", self.stayed)):
            lines.append(f"  {name:<8} {len(ids):>4}  {spans(ids) or '-'}")
        width = max(14, len(self.a), len(self.b))
        lines.append(f"  {'tokens':<14} {self.a:>{width}} {self.b:>{width}} {'change':>8}")
        for source, a, b, change in self._rows():
            lines.append(f"  {source:<14} {a:>{width}} {b:>{width}} {change:>+8d}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.to_text()

    def to_markdown(self) -> str:
        lines = [f"**{_md(self.summary)}**", "", "| entries | count | ids |", "|---|---:|---|"]
        for name, ids in (("entered", self.entered), ("left", self.left), ("stayed", self.stayed)):
            lines.append(f"| {name} | {len(ids)} | {spans(ids) or '–'} |")
        lines += ["", f"| tokens | {_md(self.a)} | {_md(self.b)} | change |", "|---|---:|---:|---:|"]
        lines.extend(f"| {source} | {a} | {b} | {change:+d} |" for source, a, b, change in self._rows())
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        entries = "".join(
            f"<tr class='bub-diff-{name}'><td>{name}</td><td style='text-align:right'>{len(ids)}</td>"
            f"<td>{html.escape(spans(ids) or '–')}</td></tr>"
            for name, ids in (("entered", self.entered), ("left", self.left), ("stayed", self.stayed))
        )
        tokens = "".join(
            f"<tr><td>{html.escape(source)}</td><td style='text-align:right'>{a}</td>"
            f"<td style='text-align:right'>{b}</td><td style='text-align:right'>{change:+d}</td></tr>"
            for source, a, b, change in self._rows()
        )
        return clean_html(
            f"<div class='bub-nb-diff'><p><b>{html.escape(self.summary)}</b></p>"
            f"<table><thead><tr><th>entries</th><th>count</th><th>ids</th></tr></thead><tbody>{entries}</tbody></table>"
            f"<table><thead><tr><th>tokens</th><th>{html.escape(self.a)}</th><th>{html.escape(self.b)}</th>"
            f"<th>change</th></tr></thead><tbody>{tokens}</tbody></table></div>"
        )


def diff_views(a: View, b: View) -> ContextDiff:
    """What changes when the model is sent view ``b`` instead of view ``a`` (``a`` → ``b``).

    Either side may be a view of a mode (``tape.view("full")``) or of a recorded turn
    (``tape.view_of_turn(-1)``); entries are compared by id, tokens by source (:data:`SOURCES`).

    Views of two tapes (two agents of a notebook) share no entry: every entry of ``b`` entered and every entry
    of ``a`` left, and ``cited`` lists the entries of ``a``'s tape that ``b``'s handoff anchor names by reference.
    """
    a_ids, b_ids = tuple(a.entry_ids), tuple(b.entry_ids)
    if a.tape and b.tape and a.tape != b.tape:
        return _across_tapes(a, b)
    in_a, in_b = set(a_ids), set(b_ids)
    return ContextDiff(
        a=view_label(a),
        b=view_label(b),
        entered=tuple(i for i in b_ids if i not in in_a),
        left=tuple(i for i in a_ids if i not in in_b),
        stayed=tuple(i for i in b_ids if i in in_a),
        tokens_a=tokens_by_source(a),
        tokens_b=tokens_by_source(b),
        a_ids=a_ids,
        b_ids=b_ids,
        retracted=tuple(i for i in a_ids if i not in in_b and i in b.retracted),
    )


def _across_tapes(a: View, b: View) -> ContextDiff:
    from bub_nb.context.references import view_references
    from bub_nb.tape.names import TapeAddress, agent_of_tape

    named = [TapeAddress.parse(ref) for ref in view_references(b)]
    # A database names the sender's tape with its owner: compare by the plain name after it.
    cited = {int(ref.target) for ref in named if ref.kind == "entry" and ref.tape.rpartition("/")[2] == a.tape}
    a_ids, b_ids = tuple(a.entry_ids), tuple(b.entry_ids)
    agents = (agent_of_tape(a.tape) or "main", agent_of_tape(b.tape) or "main")
    return ContextDiff(
        a=f"{agents[0]}: {view_label(a)}",
        b=f"{agents[1]}: {view_label(b)}",
        entered=b_ids,
        left=a_ids,
        stayed=(),
        tokens_a=tokens_by_source(a),
        tokens_b=tokens_by_source(b),
        a_ids=a_ids,
        b_ids=b_ids,
        cited=tuple(sorted(cited)),
        agents=agents,
    )


def view_for(tape: Tape, spec: str | View) -> View:
    """A side of a diff as people name it: a view, a mode (``last``, ``full``, ``window:N``, an anchor
    name) or a recorded turn (``turn:-1``, ``turn:#12``, ``turn:<run id>``)."""
    if isinstance(spec, View):
        return spec
    if not isinstance(spec, str):
        raise ContextError(f"A side of a context diff is a view, a mode or turn:N, got {spec!r}")
    word, colon, run = spec.strip().partition(":")
    if colon and word.lower() == "turn":
        return view_of_turn(tape, parse_run(run))
    return build_view(tape, parse_mode(spec))


def view_label(view: View) -> str:
    """A short name for a view in a diff: its mode, or the turn it was rebuilt from."""
    if isinstance(view, TurnView):
        return f"turn #{view.run_entry_id}"
    return view.mode


def tokens_by_source(view: View) -> dict[str, int]:
    """The view's token estimate split by where each message comes from (see :data:`SOURCES`).

    The memory block is counted out of the system prompt it sits in; the reply priming is a source of its own, so
    the sources add up to the view's ``total_tokens``, the figure ``%context`` shows.
    """
    totals = dict.fromkeys(SOURCES, 0)
    totals["reply priming"] = REPLY_PRIMING
    for message, tokens in zip(view.messages, view.tokens, strict=True):
        totals[_source(message)] += tokens
    if isinstance(view, TurnView) and view.memory_block:
        memory = count_text_tokens(view.memory_block)
        totals["memory block"] += memory
        totals["system prompt"] -= memory
    return totals


def _source(message: Message) -> str:
    role = message.get("role")
    if role == "system":
        return "system prompt"
    if role == "tool":
        return "tool results"
    content = message.get("content")
    anchor = isinstance(content, str) and content.startswith(_ANCHOR_PREFIX)
    if role == "assistant" and anchor and not message.get("tool_calls"):
        return "anchor state"
    return "messages"


def spans(ids: Sequence[int]) -> str:
    """Ids as compact ranges for people: ``#1–#4, #7``."""
    return ", ".join(f"#{a}" if a == b else f"#{a}–#{b}" for a, b in id_ranges(sorted(ids)))


def _md(text: str) -> str:
    return markdown_text(text)
