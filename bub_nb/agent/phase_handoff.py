"""Handoffs from the agent: a plain anchor, or one whose state summarizes the phase it closes, citing it.

Everything is checked and summarized before the first write: a failed summary writes nothing. A
summarizing handoff writes a ``summary`` event (what the summary cost), then the anchor and its
``handoff`` event, in one append. A preview does all of that but the append, which accepting it does.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from textwrap import shorten
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary, ref

from bub_nb.agent.eventloop import run_sync
from bub_nb.agent.models.base import context_window_of
from bub_nb.agent.models.calibration import scale_of
from bub_nb.agent.summaries.extractive import carried_into, carried_sources
from bub_nb.agent.summaries.summarize import (
    Phase,
    Summary,
    closing_phase,
    extractive_phase_summary,
    fitted,
    summarize_phase,
)
from bub_nb.context.messages import anchor_message
from bub_nb.context.retention import Retention, has_summary, report
from bub_nb.context.tokens import count_messages_tokens
from bub_nb.errors import BubNbError
from bub_nb.tape.citations import check_citations, check_state_citations, own_words_state
from bub_nb.tape.corrections.by_value import byte_forms, when_redacted
from bub_nb.tape.entries import TapeEntry, plain_json
from bub_nb.tape.events import SUMMARY, handoff_entries
from bub_nb.tape.names import check_handoff_name

if TYPE_CHECKING:
    from bub_nb.agent.models import Model
    from bub_nb.context import View
    from bub_nb.tape import Tape

AUTO_HANDOFF_ANCHOR = "auto_handoff/context_overflow"
"""The anchor the agent loop writes when a prompt overflows the model's context."""


async def write_handoff(
    tape: Tape, model: Model, name: str, state: Mapping[str, Any], *, summarize: bool, meta: Mapping[str, Any]
) -> list[TapeEntry]:
    """Write the anchor ``name`` with ``state``; with ``summarize`` the model's summary of the phase goes first.

    Returns what was written: the ``summary`` event (when summarizing), the anchor, the ``handoff`` event.
    """
    return tape.extend(await handoff_to_write(tape, model, name, state, summarize=summarize, meta=meta))


async def handoff_to_write(
    tape: Tape, model: Model, name: str, state: Mapping[str, Any], *, summarize: bool, meta: Mapping[str, Any]
) -> list[TapeEntry]:
    """The entries :func:`write_handoff` writes, checked (and summarized) but not written."""
    check_handoff_name(name)
    plain_json(dict(state))  # a state the tape cannot hold is refused before the model is asked
    check_state_citations(dict(state), tape.last_id)  # the user's own summary= is bounded by the tape too
    if not summarize:
        return handoff_entries(name, dict(state) or None, **meta)
    summary = await summarize_phase(model, closing_phase(tape))
    return summary_entries(name, summary, state, meta)


@dataclass(frozen=True)
class HandoffPreview:
    """A handoff checked and summarized but not written: what :meth:`accept` writes, exactly, with no model call.

    ``state`` is the anchor's state (its ``summary`` cites the phase), ``retention`` what the summary keeps of
    the phase (``None`` without a summary), and ``tokens_before`` / ``tokens_after`` what the next view costs
    now and once the handoff is written. A preview goes stale when the tape moves on: accepting it then is
    refused and writes nothing.
    """

    tape: Tape
    name: str
    entries: tuple[TapeEntry, ...]
    retention: Retention | None
    tokens_before: int
    tokens_after: int
    last_id: int
    last_entry: tuple[TapeEntry, ...]

    @property
    def state(self) -> dict[str, Any]:
        anchor = next(entry for entry in self.entries if entry.kind == "anchor")
        return dict(anchor.payload.get("state") or {})

    def stale(self) -> str | None:
        """Why accepting is refused (the tape moved on since the preview, or a redaction took text it holds), or
        ``None``."""
        if (dropped := _REDACTED.get(id(self))) is not None and dropped() is self:
            return (
                f"The preview of handoff {self.name!r} held text that was redacted since; it was dropped and nothing "
                "was written: preview it again"
            )
        last = self.tape.last_id
        if last == self.last_id and tuple(self.tape.read(last, last + 1)) == self.last_entry:
            return None
        return (
            f"The preview of handoff {self.name!r} is stale: the tape was at #{self.last_id} and is now at "
            f"#{self.tape.last_id}; nothing was written: preview it again"
        )

    def accept(self) -> list[TapeEntry]:
        """Write what was previewed (no model is asked again); refused with one line when the preview is stale."""
        if (reason := self.stale()) is not None:
            raise BubNbError(reason)
        written = self.tape.extend(list(self.entries))
        remember_preview(self, forget=True)
        return written

    def to_text(self) -> str:
        """The preview in plain text, as a comma command answers it."""
        state = self.state
        lines = [f"Preview of handoff {self.name!r}: nothing is written yet."]
        for key in ("summary", "next_steps"):
            if isinstance(state.get(key), str) and state[key].strip():
                lines += [f"{key.replace('_', ' ').capitalize()}:", state[key].strip()]
        if self.retention is not None:
            lines.append(f"What the summary keeps: {self.retention.short()}")
        lines.append(f"The next view: {self.tokens_before:,} tokens now, {self.tokens_after:,} once written.")
        lines.append(f"Accept it with ,handoff name={self.name} accept=true (no model is asked again).")
        return "\n".join(lines)


async def preview_handoff(
    tape: Tape,
    model: Model,
    name: str,
    state: Mapping[str, Any],
    *,
    summarize: bool,
    meta: Mapping[str, Any],
    view: Callable[[], View],
) -> HandoffPreview:
    """The handoff :func:`write_handoff` would write, with its retention report and the next view's tokens before
    and after it; nothing is written (the view after is built in a fork that is dropped)."""
    last_id = tape.last_id
    last_entry = tuple(tape.read(last_id, last_id + 1))
    entries = await handoff_to_write(tape, model, name, state, summarize=summarize, meta=meta)
    before = view().total_tokens
    with tape.fork(merge_back=False):
        tape.extend(entries)
        after = view().total_tokens
    preview = HandoffPreview(tape, name, tuple(entries), None, before, after, last_id, last_entry)
    span = preview.state.get("range")
    if has_summary(preview.state) and isinstance(span, list) and len(span) == 2:
        found = report(tape.read(span[0], span[1] + 1), preview.state, anchor=name).found
        preview = replace(preview, retention=Retention(name, 0, (span[0], span[1]), found))
    remember_preview(preview)
    return preview


def summary_entries(name: str, summary: Summary, state: Mapping[str, Any], meta: Mapping[str, Any]) -> list[TapeEntry]:
    """The ``summary`` event, the anchor carrying the summary (under ``state``), its ``handoff`` event."""
    return [
        TapeEntry.event(SUMMARY, summary.event_data(name), **meta),
        *handoff_entries(name, own_words_state(summary.state(), state), **meta),
    ]


async def overflow_summary(model: Model, tape: Tape, room: int | None = None) -> Summary:
    """The summary of the phase that overflowed: the model's (in parts), or the extractive one if that fails.

    ``room`` is how many tokens the anchor's state may take so the retry still fits; the oldest lines go first.
    """
    phase = closing_phase(tape)
    try:
        summary = with_carried(await summarize_phase(model, phase), phase)
    except Exception as exc:  # any failure of the model: the retry must still carry what came before
        summary = extractive_phase_summary(phase, error=f"{type(exc).__name__}: {exc}")
    return fitted(summary, room, overflow_summary_state)


_ANSWERED = re.compile(r"^Model '.*?' at \S+ answered \d+: ")
_ERROR_LIMIT = 160
_SOURCES_LIMIT = 16
_UNCITED_LIMIT = 3


def overflow_state(error: Exception) -> dict[str, Any]:
    """The auto-handoff anchor's own keys: why it was written, and the endpoint's refusal cut to one short line."""
    text = _ANSWERED.sub("", " ".join(str(error).split()), count=1)  # which endpoint said it is not for the model
    return {"reason": "context_length_exceeded", "error": shorten(text, _ERROR_LIMIT, placeholder=" …")}


def overflow_summary_state(summary: Summary) -> dict[str, Any]:
    """The summary's keys as an overflow anchor carries them: the newest sources, a few uncited sentences, short.

    Every retry sends this anchor, so its bookkeeping is bounded; the ``summary`` event keeps the request log.
    """
    state = summary.state()
    state["sources"] = state["sources"][-_SOURCES_LIMIT:]
    state["uncited"] = [shorten(line, 80, placeholder=" …") for line in state["uncited"][:_UNCITED_LIMIT]]
    return state


def overflow_room(
    model: Model, system_prompt: str, prompt: str, error: Exception, overflowed: int | None = None
) -> int | None:
    """Tokens (offline estimate) an overflow anchor's summary may take so the retry fits.

    The retry (system, anchor, prompt) must fit the window (its answer gets what is left, as ``max_tokens``),
    and be smaller than ``overflowed``, the estimate of the request that overflowed.
    """
    anchor = anchor_message(AUTO_HANDOFF_ANCHOR, overflow_state(error))
    sent = [{"role": "system", "content": system_prompt}, anchor, {"role": "user", "content": prompt}]
    base = count_messages_tokens(sent)
    limits = []
    window = context_window_of(model)
    if window is not None:
        limits.append(int(window / scale_of(model).ratio) - base)
    if overflowed is not None:
        limits.append(overflowed - base - 1)
    return min(limits) if limits else None


def with_carried(summary: Summary, phase: Phase) -> Summary:
    """``summary`` with what the anchor the phase starts at carried, when the model's text left it out: an
    auto-handoff replaces that anchor in every later view, so what it carried must go on."""
    text = carried_into(summary.summary, phase.items)
    if text == summary.summary:
        return summary
    checked = check_citations(text, *summary.range, carried_sources(phase.items))
    return replace(summary, summary=checked.text, sources=tuple(sorted({*summary.sources, *checked.sources})))


_PENDING: WeakKeyDictionary[Any, dict[tuple[str, str], HandoffPreview]] = WeakKeyDictionary()
"""The previews made on each tape and not accepted yet, by store, then tape name and anchor name (the newest of
each name), so ``,handoff name=N accept=true`` and ``%handoff N --accept`` find what was shown, however it was
asked for: a tape is found by its name in its store, not by the object that previewed it (every cell opens the
tape of the agent holding the conversation afresh)."""


def remember_preview(preview: HandoffPreview, *, forget: bool = False) -> None:
    """Keep ``preview`` as the pending one of its name on its tape; with ``forget``, drop it (it was accepted)."""
    pending = _PENDING.setdefault(preview.tape.base_store, {})
    key = (preview.tape.name, preview.name)
    if not forget:
        pending[key] = preview
    elif pending.get(key) is preview:
        del pending[key]


def pending_preview(tape: Tape, name: str) -> HandoffPreview | None:
    """The newest preview of a handoff ``name`` on ``tape`` not accepted yet, if any."""
    return _PENDING.get(tape.base_store, {}).get((tape.name, name))


def drop_previews_holding(text: str) -> int:
    """Drop every pending preview whose entries hold ``text`` (it was just redacted); returns how many.

    A dropped preview stays refused: accepting it names the redaction and writes nothing.
    """
    dropped = 0
    for pending in list(_PENDING.values()):
        for name, preview in list(pending.items()):
            if any(form in entry.to_line() for entry in preview.entries for form in byte_forms(text)):
                _REDACTED[id(preview)] = ref(preview)
                del pending[name]
                dropped += 1
    return dropped


_REDACTED: dict[int, ref[HandoffPreview]] = {}
"""The previews dropped by a redaction (by identity: a preview holds dicts, so it has no hash), so one still
held (a widget's button) is refused."""

when_redacted(drop_previews_holding)


@dataclass(frozen=True)
class PhaseHandoff:
    """What a handoff on one tape needs, and nothing more: the tape, the model that summarizes, the meta its entries
    carry and how the next view is built (for a preview's tokens). An :class:`~bub_nb.agent.Agent` hands off with
    its own; ``%handoff NAME --summarize`` makes one of these rather than a whole agent with tools and servers."""

    tape: Tape
    model: Model
    view: Callable[[], View]
    meta: Mapping[str, Any] = field(default_factory=dict)

    def write(self, name: str, /, *, summarize: bool = False, **state: Any) -> list[TapeEntry]:
        """:func:`write_handoff` from synchronous code: the entries written."""
        return run_sync(write_handoff(self.tape, self.model, name, state, summarize=summarize, meta=self.meta))

    def preview(self, name: str, /, *, summarize: bool = True, **state: Any) -> HandoffPreview:
        """:func:`preview_handoff` from synchronous code: nothing is written until ``accept()``."""
        tape, model, meta, view = self.tape, self.model, self.meta, self.view
        return run_sync(preview_handoff(tape, model, name, state, summarize=summarize, meta=meta, view=view))
