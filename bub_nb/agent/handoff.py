"""Handoffs from the agent: a plain anchor, or one whose state summarises the phase it closes, citing it.

Everything is checked and summarised before the first write: a failed summary writes nothing. A
summarising handoff writes a ``summary`` event (what the summary cost), then the anchor and its
``handoff`` event, in one append.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from textwrap import shorten
from typing import TYPE_CHECKING, Any

from bub_nb.agent.models.calibration import scale_of
from bub_nb.agent.preflight import context_window_of
from bub_nb.agent.summarize import (
    Summary,
    closing_phase,
    extractive_phase_summary,
    fitted,
    summarise_phase,
    summarised_state,
)
from bub_nb.context.messages import anchor_message
from bub_nb.context.tokens import count_messages_tokens
from bub_nb.tape.entries import TapeEntry, plain_json
from bub_nb.tape.events import SUMMARY, handoff_entries
from bub_nb.tape.names import check_handoff_name

if TYPE_CHECKING:
    from bub_nb.agent.models import Model
    from bub_nb.tape import Tape

AUTO_HANDOFF_ANCHOR = "auto_handoff/context_overflow"
"""The anchor the agent loop writes when a prompt overflows the model's context."""


async def write_handoff(
    tape: Tape, model: Model, name: str, state: Mapping[str, Any], *, summarize: bool, meta: Mapping[str, Any]
) -> list[TapeEntry]:
    """Write the anchor ``name`` with ``state``; with ``summarize`` the model's summary of the phase goes first.

    Returns what was written: the ``summary`` event (when summarising), the anchor, the ``handoff`` event.
    """
    check_handoff_name(name)
    plain_json(dict(state))  # a state the tape cannot hold is refused before the model is asked
    if not summarize:
        return tape.handoff(name, dict(state) or None, **meta)
    summary = await summarise_phase(model, closing_phase(tape))
    return tape.extend(summary_entries(name, summary, state, meta))


def summary_entries(name: str, summary: Summary, state: Mapping[str, Any], meta: Mapping[str, Any]) -> list[TapeEntry]:
    """The ``summary`` event, the anchor carrying the summary (under ``state``), its ``handoff`` event."""
    return [
        TapeEntry.event(SUMMARY, summary.event_data(name), **meta),
        *handoff_entries(name, summarised_state(summary, state), **meta),
    ]


async def overflow_summary(model: Model, tape: Tape, room: int | None = None) -> Summary:
    """The summary of the phase that overflowed: the model's (in parts), or the extractive one if that fails.

    ``room`` is how many tokens the anchor's state may take so the retry still fits; the oldest lines go first.
    """
    phase = closing_phase(tape)
    try:
        summary = await summarise_phase(model, phase)
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
