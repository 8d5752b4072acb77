"""A context overflow beyond seed 000's one auto-handoff: bound the ``phases`` chain, never hand off again for
nothing, and name the mode when it is the cause."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bub_nb.agent.models.base import context_window_of
from bub_nb.agent.phase_handoff import AUTO_HANDOFF_ANCHOR
from bub_nb.context.modes import as_strategy
from bub_nb.context.phases import EARLIER_PHASE, Phases
from bub_nb.context.tokens import count_message_tokens, count_messages_tokens
from bub_nb.errors import BubNbError, ContextLengthError

if TYPE_CHECKING:
    from bub_nb.agent.models import Model
    from bub_nb.agent.turn import TurnRecorder
    from bub_nb.context import View
    from bub_nb.tape import AnchorSummary, Tape


def phases_mode(context: Any) -> Phases | None:
    """The ``phases`` strategy ``context`` stands for, else ``None``."""
    try:
        strategy = as_strategy(context)
    except BubNbError:
        return None
    return strategy if isinstance(strategy, Phases) else None


def chain_tokens(view: View) -> tuple[int, int]:
    """How many earlier phases the view sends before the current one, and their tokens."""
    tokens = [
        count
        for message, count in zip(view.messages, view.tokens, strict=True)
        if message.get("role") == "assistant" and str(message.get("content") or "").startswith(EARLIER_PHASE)
    ]
    return len(tokens), sum(tokens)


def bounded_phases(context: Any, model: Model, system_prompt: str, view: View) -> Phases | None:
    """The ``phases`` mode with its chain of earlier phases bounded so the request fits, or ``None``.

    ``None`` when the mode is not ``phases``, already bounded, or sends no earlier phase. The bound is what the
    window leaves after the system prompt, the current phase and a quarter for the answer; without a known
    window, half the chain's tokens.
    """
    mode = phases_mode(context)
    count, tokens = chain_tokens(view)
    if mode is None or mode.max_tokens is not None or count == 0:
        return None
    window = context_window_of(model)
    if window is None:
        return Phases(max_tokens=tokens // 2)
    system = count_message_tokens({"role": "system", "content": system_prompt})
    current = view.total_tokens - tokens
    room = max(0, window - max(window // 4, 16) - system - current)
    return Phases(max_tokens=room) if room < tokens else None  # a chain that fits is not the cause


def overflowing_phases(
    context: Any, model: Model, system_prompt: str, view: View, messages: list[dict[str, Any]]
) -> Phases | None:
    """:func:`bounded_phases` when the model's window is known and the request is estimated over it, else ``None``."""
    window = context_window_of(model)
    if window is None or phases_mode(context) is None or count_messages_tokens(messages) <= window:
        return None
    return bounded_phases(context, model, system_prompt, view)


def bounded_notice(view: View, bound: Phases) -> str:
    count, tokens = chain_tokens(view)
    return (
        f"The request did not fit the model's context in 'phases' mode: its {count} earlier phases (≈ {tokens} "
        f"tokens) were bounded to ≈ {bound.max_tokens} tokens, the oldest left out of the view (they stay on "
        "the tape); no handoff was written"
    )


def repeated_overflow(tape: Tape) -> AnchorSummary | None:
    """The auto-handoff anchor the current phase starts at when nothing was answered since (a retry that failed):
    another one would only add a phase, so none is written."""
    anchor = tape.last_anchor()
    if anchor is None or anchor.name != AUTO_HANDOFF_ANCHOR:
        return None
    answered = any(entry.payload.get("role") == "assistant" for entry in tape.read(anchor.id, kinds=("message",)))
    return None if answered else anchor


def overflow_error(exc: ContextLengthError, context: Any, view: View, anchor: AnchorSummary | None = None) -> Exception:
    """The overflow a turn ends with, naming what caused it: the mode's chain, or an auto-handoff already tried."""
    reasons = []
    count, tokens = chain_tokens(view)
    if phases_mode(context) is not None and count:
        reasons.append(
            f"in 'phases' mode the view sends {count} earlier phases (≈ {tokens} tokens) before the current "
            "one: use --context last, hand off less often, or use a model with a larger window"
        )
    if anchor is not None:
        reasons.append(f"the phase already starts at anchor {anchor.name} #{anchor.id}, so no new handoff was written")
    if not reasons:
        return exc
    return ContextLengthError(f"{exc}; {'; '.join(reasons)}")


def narrowed_phases(
    context: Any, model: Model, recorder: TurnRecorder, view: View, messages: list[dict[str, Any]] | None = None
) -> Phases | None:
    """The bounded ``phases`` mode to retry with, its notice given to ``recorder``; ``None`` when bounding cannot
    help. With ``messages`` (the request about to be sent) only when the window is known and they are over it."""
    if messages is None:
        bound = bounded_phases(context, model, recorder.system_prompt, view)
    else:
        bound = overflowing_phases(context, model, recorder.system_prompt, view, messages)
    if bound is not None:
        recorder.notice(bounded_notice(view, bound))
    return bound


def hopeless_overflow(exc: ContextLengthError, context: Any, view: View, tape: Tape, retries: int) -> int:
    """The retries left after this one; raises the overflow, its cause named, when none is left or the phase
    already starts at an auto-handoff nothing answered since (another would only add a phase)."""
    again = repeated_overflow(tape) if retries else None
    if retries == 0 or again is not None:
        raise overflow_error(exc, context, view, again) from exc
    return retries - 1
