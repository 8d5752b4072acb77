"""What a past turn saw: its request rebuilt from the view its ``run`` event recorded."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from bub_nb.context.cells import cell_message
from bub_nb.context.display import view_html, view_markdown, view_text
from bub_nb.context.strategies import Selection
from bub_nb.context.tokens import count_message_tokens
from bub_nb.context.view import View, last_run_usage, view_from_selection
from bub_nb.errors import ContextError
from bub_nb.markup import clean_html, markdown_text
from bub_nb.tape.anchors import AnchorSummary
from bub_nb.tape.entries import TapeEntry
from bub_nb.tape.events import NOTEBOOK_CELL, RUN, RecordedView, run_view

if TYPE_CHECKING:
    from bub_nb.tape import Tape
    from bub_nb.tape.stores.protocol import TapeStore

#: How a run is named: its run id, the entry id of its ``run`` event, or a position (``-1`` is the last turn).
RunSpec = str | int

NEAR_RUN: Final = 256
_MEMORY_BLOCK: Final = re.compile(r"<memory>\n.*?\n</memory>", re.DOTALL)


@dataclass(frozen=True, slots=True)
class TurnView(View):
    """A recorded turn's request, rebuilt: the system prompt it sent, then its view's messages.

    ``messages`` is exactly what the turn's last model call sent, system prompt first (``sources``
    gives the system entry's id for it); ``entry_ids`` are the entries rendered after it, as the run
    event recorded them. ``memory_version`` is the memory zone version the system prompt carried.
    """

    run_id: str = ""
    run_entry_id: int = 0
    system_prompt: str = ""
    memory_version: int | None = None
    recorded_system_tokens: int = 0

    @property
    def memory_block(self) -> str:
        """The ``<memory>`` block inside the system prompt; empty when there was nothing to remember."""
        found = _MEMORY_BLOCK.search(self.system_prompt)
        return found.group(0) if found else ""

    @property
    def title(self) -> str:
        memory = f", memory v{self.memory_version}" if self.memory_version is not None else ""
        return f"Turn #{self.run_entry_id} (run {self.run_id or '?'}{memory})"

    def to_text(self) -> str:
        return f"{self.title}\n{view_text(self)}"

    def __str__(self) -> str:
        return self.to_text()

    def to_markdown(self) -> str:
        return f"*{markdown_text(self.title)}*\n\n{view_markdown(self)}"

    def _repr_html_(self) -> str:
        return clean_html(f"<p><i>{html.escape(self.title)}</i></p>{view_html(self)}")


def parse_run(text: str) -> RunSpec:
    """A run as people type it: ``-1`` (a position), ``#12`` or ``12`` (a run event's id), or a run id."""
    spelled = text.strip().removeprefix("#")
    if re.fullmatch(r"-?\d+", spelled):
        return int(spelled)
    if not spelled:
        raise ContextError(f"A turn needs a position (-1), a run event id (#12) or a run id, got {text!r}")
    return spelled


def find_run(tape: Tape, run: RunSpec) -> TapeEntry:
    """The ``run`` event of a turn: by run id, by its entry id, or by position (``-1`` the newest)."""
    if isinstance(run, bool) or not isinstance(run, (str, int)):
        raise ContextError(f"A turn is a run id, a run event's entry id or a position like -1, got {run!r}")
    if isinstance(run, int) and run > 0:
        if run > tape.last_id:
            raise ContextError(f"Entry #{run} is not on tape {tape.name!r} (last id {tape.last_id})")
        entry = tape.get(run)
        if entry.kind != "event" or entry.name != RUN:
            what = f"{'an' if entry.kind[:1] in 'aeiou' else 'a'} {entry.kind}"
            raise ContextError(
                f"Entry #{run} of tape {tape.name!r} is {what}, not a turn's run event: a positive number is a run "
                "event's entry id; turns by position count from the end (-1 the last turn, -2 the one before)"
            )
        return entry
    if run == 0:
        raise ContextError("Turn positions count from the end: -1 is the last turn, -2 the one before")
    count = 0
    for entry in tape.iter_reverse(kinds=("event",)):
        if entry.name != RUN:
            continue
        count += 1
        if (isinstance(run, int) and count == -run) or (isinstance(run, str) and entry.meta.get("run_id") == run):
            return entry
    if isinstance(run, int):
        raise ContextError(f"Tape {tape.name!r} has {count} turns; there is no turn {run}")
    raise ContextError(f"No turn with run id {run!r} on tape {tape.name!r}")


def view_of_turn(tape: Tape, run: RunSpec) -> TurnView:
    """Rebuild the request a recorded turn sent: its system prompt, then its entries rendered by the same rules.

    The system prompt is the turn's own ``system`` entry (it holds the day, the instructions and the
    memory block as they were); the entries are those the ``run`` event recorded. A run without a
    recorded view, or whose entries no longer render as recorded, raises a :class:`ContextError`.
    """
    entry = find_run(tape, run)
    recorded = run_view(entry)
    if recorded is None:
        raise ContextError(
            f"Turn #{entry.id} of tape {tape.name!r} recorded no view (it was stopped before its first "
            "request, or written before turns kept their view, or by Bub), so its request cannot be rebuilt"
        )
    run_id = entry.meta.get("run_id")
    run_id = run_id if isinstance(run_id, str) else ""
    # One read from the view's first entry to the run event holds the view's entries and, normally, the
    # turn's system entry: a store read has a fixed cost worth paying once.
    span = tape.read(recorded.entry_ids[0] if recorded.entry_ids else max(1, entry.id - NEAR_RUN), entry.id)
    system = _system_entry(tape, entry, run_id, span)
    view = _entries_view(tape, entry, recorded, span)
    prompt = str(system.payload.get("content") or "")
    message = {"role": "system", "content": prompt}
    tokens = count_message_tokens(message)
    return TurnView(
        messages=(message, *view.messages),
        entry_ids=view.entry_ids,
        anchor=view.anchor,
        tokens=(tokens, *view.tokens),
        total_tokens=view.total_tokens + tokens,
        mode=view.mode,
        usage=last_run_usage([entry]),
        sources=(system.id, *view.sources),
        dropped=view.dropped,
        tokenizer=view.tokenizer,
        tape=tape.name,
        run_id=run_id,
        run_entry_id=entry.id,
        system_prompt=prompt,
        memory_version=recorded.memory_version,
        recorded_system_tokens=recorded.system_tokens,
    )


def student_turn(tape_name: str, store: TapeStore | str | None = None, run: RunSpec = -1) -> TurnView:
    """A student's recorded turn (the last one unless ``run`` says), as ``%context --turn`` rebuilds it: what a
    teacher opens from the class overview. ``tape_name`` is the overview's ``tape_name`` (``owner/name`` on a
    database) and ``store`` what ``class_overview`` was given; a tape the store does not hold is an error that
    names the tapes it may have meant, and so is one without turns."""
    from bub_nb.tape.open import open_tape

    return view_of_turn(open_tape(tape_name, store=store, create=False), run)


def _system_entry(tape: Tape, run: TapeEntry, run_id: str, span: list[TapeEntry]) -> TapeEntry:
    """The ``system`` entry the turn opened with: the newest one of its run before the run event."""
    found = [entry for entry in span if entry.kind == "system" and entry.meta.get("run_id") == run_id]
    if not found and span:  # a turn whose view starts after its own first entries (a window)
        for start in (max(1, span[0].id - NEAR_RUN), 1):
            earlier = tape.read(start, span[0].id, kinds=("system",))
            found = [entry for entry in earlier if entry.meta.get("run_id") == run_id]
            if found:
                break
    if not found:
        raise ContextError(f"Turn #{run.id} of tape {tape.name!r} has no system prompt entry for run {run_id!r}")
    return found[-1]


def _entries_view(tape: Tape, run: TapeEntry, recorded: RecordedView, span: list[TapeEntry]) -> View:
    wanted = set(recorded.entry_ids)
    # A recorded notebook cell reaches the model as a user message (the ``notebook`` mode's rule).
    entries = [cell_message(e) if e.name == NOTEBOOK_CELL else e for e in span if e.id in wanted]
    anchor = None
    if recorded.anchor is not None:
        found = tape.get(recorded.anchor)
        state = found.payload.get("state")
        anchor = AnchorSummary(found.id, found.name or "", state if isinstance(state, dict) else None, found.date)
    view = view_from_selection(Selection(tuple(entries), anchor), recorded.mode)
    if view.entry_ids != recorded.entry_ids:
        missing = sorted(wanted - set(view.entry_ids))
        raise ContextError(
            f"Turn #{run.id} of tape {tape.name!r} cannot be rebuilt exactly: entries "
            f"{', '.join(f'#{i}' for i in missing) or 'in another order'} no longer render as recorded"
        )
    return view


@dataclass(frozen=True, slots=True)
class TurnOf:
    """A view mode that shows a recorded turn's request (``%context --turn -1``), rebuilt on each refresh."""

    run: RunSpec

    @property
    def label(self) -> str:
        return f"turn:{self.run}"

    def select(self, tape: Tape) -> Selection:
        view = view_of_turn(tape, self.run)
        return Selection(tuple(tape.get(i) for i in view.entry_ids), view.anchor)

    def build(self, tape: Tape) -> TurnView:
        return view_of_turn(tape, self.run)
