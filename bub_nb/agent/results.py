"""What a tool returns, made fit for the model: redacted as prompts are, and cut to a token budget."""

from __future__ import annotations

from bub_nb.agent.tools.bounds import DEFAULT_RESULT_TOKENS, cut_to_tokens
from bub_nb.errors import BubNbError
from bub_nb.tape.redact import redact_text

__all__ = ["DEFAULT_RESULT_TOKENS", "check_result_budget", "fit_result"]


def check_result_budget(tokens: int | None) -> int | None:
    """``tokens`` if it is a budget (a whole number, at least 50), ``None`` for no budget; else a one-line error."""
    if tokens is None:
        return None
    if type(tokens) is not int or tokens < 50:
        raise BubNbError(f"A tool result budget must be a whole number of at least 50 tokens, got {tokens!r}")
    return tokens


def fit_result(text: str, tokens: int | None) -> str:
    """``text`` with secrets replaced, then cut to about ``tokens`` tokens with a last line saying it was cut."""
    return cut_to_tokens(redact_text(text), tokens, "this result", "shown. Ask for a smaller part.")
