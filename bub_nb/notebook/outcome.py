"""What a ``%%bub`` cell shows when its turn ends: the footer under an answer, and the note on an interrupt."""

from __future__ import annotations

from typing import Any

from bub_nb.markup import code_span, markdown_text
from bub_nb.tape.reports.prices import format_cost, priced_cost

INTERRUPTED_WITH_TEXT = "*Interrupted: the partial answer is kept on the tape.*"
INTERRUPTED_EMPTY = "*Interrupted before any answer arrived; the prompt is kept on the tape.*"
CUT_SHORT = "Warning: *The answer was cut short; the partial text is on the tape.*"


def interrupted(partial: str) -> str:
    """The cell's last word on an interrupted turn: the partial answer and a note that says what is kept."""
    return f"{partial}\n\n{INTERRUPTED_WITH_TEXT}" if partial else INTERRUPTED_EMPTY


def footer(turn: Any, anchor: str | None, tape: str | None = None) -> str:
    """One line of Markdown under an answer (the display sets it in small print): model, where the view starts,
    its size, the usage, its cost when the model has a price (``set_prices``, ``BubMagics.prices``,
    ``BUB_PRICES``) and the entries written.

    The view's estimate counts the messages taken from the tape; the model's usage also counts the
    system prompt and the tool schemas, so the two are labelled apart.
    """
    if turn.status == "command":  # a comma command's confirmation: the tape it acted on
        return f"on tape {code_span(tape)}" if tape else ""
    parts = [markdown_text(turn.model)]
    if anchor:
        parts.append(f"view from anchor {markdown_text(anchor)}")
    if turn.view is not None:
        view = turn.view
        parts.append(
            f"view: {len(view.messages)} messages ≈ {view.total_tokens} tokens, without system prompt and tools"
        )
    if turn.usage is not None:
        usage = turn.usage
        cached = f" ({usage.cached_tokens} cached)" if usage.cached_tokens else ""
        reasoning = f" ({usage.reasoning_tokens} reasoning)" if usage.reasoning_tokens else ""
        parts.append(
            f"usage {usage.prompt_tokens} prompt{cached} + {usage.completion_tokens} completion{reasoning} tokens"
        )
        cost = priced_cost(turn.model, usage.prompt_tokens, usage.completion_tokens)
        if cost is not None:
            parts.append(f"cost {format_cost(cost)}")
    if turn.entries:
        ids = [entry.id for entry in turn.entries]
        parts.append(f"entries #{min(ids)}–#{max(ids)}")  # a range reads low to high, whatever wrote it
    return " · ".join(parts)
