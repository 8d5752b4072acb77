"""How much of a model's text a tool keeps: results and the arguments that become tape state, cut to a budget."""

from __future__ import annotations

from bub_nb.context.tokens import count_text_tokens

DEFAULT_RESULT_TOKENS = 2000


def fit_argument(text: str, tokens: int | None, what: str) -> str:
    """A model's tool argument that becomes tape state (a handoff's reason or summary), bounded as a result is:
    cut to about ``tokens`` tokens (default :data:`DEFAULT_RESULT_TOKENS`: never unbounded), with a last line
    saying so, so no later view carries it whole."""
    return cut_to_tokens(text, tokens or DEFAULT_RESULT_TOKENS, f"this {what}", "kept")


def cut_to_tokens(text: str, tokens: int | None, what: str, rest: str) -> str:
    """``text`` cut to about ``tokens`` tokens, ending with one line that says ``what`` was cut and how much is
    ``rest``."""
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
        f"{cut}\n[cut: {what} was ≈{total:,} tokens, over the budget of {tokens:,}; "
        f"the first ≈{count_text_tokens(cut):,} are {rest}]"
    )
