"""Token estimates calibrated per model: the offline estimate scaled by what the model's server counted.

A server's tokenizer can count several times the offline estimate (a small vocabulary, a chat template's
framing). Each time a server reports the prompt tokens of a request bub_nb estimated, the model's scale
learns that ratio, so the checks made before a request (does it fit the window, how much room an overflow
summary gets, how long an answer may be) use counts near the server's own.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from bub_nb.context.tokens import count_messages_tokens

__all__ = ["TokenScale", "estimate_request", "scale_of"]

_LOWEST, _HIGHEST = 0.25, 16.0
_KEPT = 16


@dataclass
class TokenScale:
    """Server tokens per estimated token for one model, learned from the prompt tokens its server reports.

    The ratio differs with the text (words a vocabulary holds whole count less than code or noise), and the
    scale guards a window, so it is the highest ratio among the latest requests: an estimate may come out
    a little high, rarely low.
    """

    recent: list[float] = field(default_factory=list)
    samples: int = 0

    @property
    def ratio(self) -> float:
        return max(self.recent) if self.recent else 1.0

    def observe(self, estimated: int, counted: int) -> None:
        """Learn from one request: ``estimated`` offline, ``counted`` by the server (both whole prompts)."""
        if estimated <= 0 or counted <= 0:
            return
        self.recent = [*self.recent[-(_KEPT - 1) :], min(_HIGHEST, max(_LOWEST, counted / estimated))]
        self.samples += 1

    def scaled(self, estimated: int) -> int:
        return math.ceil(estimated * self.ratio)


def scale_of(model: object) -> TokenScale:
    """The model's scale; a model that keeps none (offline, scripted) gets 1:1."""
    scale = getattr(model, "token_scale", None)
    return scale if isinstance(scale, TokenScale) else TokenScale()


def estimate_request(model: object, messages: Iterable[dict[str, Any]]) -> int:
    """The tokens ``model``'s server would count for a request of ``messages`` (and the tools it is sent with).

    The scale is learned from whole requests against their messages' estimate, so it carries the tools'
    share too (a server that counts none of them, as the local test server, keeps it lower).
    """
    return scale_of(model).scaled(count_messages_tokens(messages))
