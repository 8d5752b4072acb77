"""What a tool returns, made fit for the model: redacted as prompts are, and cut to a token budget."""

from __future__ import annotations

from bub_nb.context.tokens import count_text_tokens
from bub_nb.errors import BubNbError
from bub_nb.tape.redact import redact_text

DEFAULT_RESULT_TOKENS = 2000


def check_result_budget(tokens: int | None) -> int | None:
    """``tokens`` if it is a budget (a whole number, at least 50), ``None`` for no budget; else a one-line error."""
    if tokens is None:
        return None
    if type(tokens) is not int or tokens < 50:
        raise BubNbError(f"A tool result budget must be a whole number of at least 50 tokens, got {tokens!r}")
    return tokens


def fit_result(text: str, tokens: int | None) -> str:
    """``text`` with secrets replaced, then cut to about ``tokens`` tokens with a last line saying it was cut."""
    text = redact_text(text)
    if tokens is None:
        return text
    total = count_text_tokens(text)
    if total <= tokens:
        return text
    room = tokens - 40  # the note
    keep = max(int(len(text) * room / total), 0)
    while keep and count_text_tokens(text[:keep]) > room:
        keep = int(keep * 0.9)
    cut = text[:keep]
    if "\n" in cut[-200:]:
        cut = cut[: cut.rindex("\n")]  # end on a whole line where one is near
    return (
        f"{cut}\n[cut: this result was ≈{total:,} tokens, over the budget of {tokens:,}; "
        f"the first ≈{count_text_tokens(cut):,} are shown. Ask for a smaller part.]"
    )
