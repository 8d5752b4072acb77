"""One turn's outcome: what it answered, the entries it wrote and its usage."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bub_nb.errors import ContextLengthError, ModelError, PromptTooLongError
from bub_nb.markup import markdown_html

if TYPE_CHECKING:
    from bub_nb.agent.models.base import Usage
    from bub_nb.context import View
    from bub_nb.tape import TapeEntry


@dataclass(frozen=True, slots=True, kw_only=True)
class Turn:
    """The outcome of one prompt: the answer, every entry written and the model's usage.

    ``status`` is ``ok``, ``error``, ``interrupted``, ``max_steps`` or ``command``; ``entries`` are
    the turn's entries in tape order, including those its tools wrote (an anchor, a memory zone).
    """

    text: str
    entries: tuple[TapeEntry, ...]
    usage: Usage | None
    status: str
    model: str
    run_id: str
    elapsed_ms: float
    steps: int = 0
    error: str | None = None
    view: View | None = None
    notices: tuple[str, ...] = ()
    """One line each for what the turn did on its own that the user should see (an auto-handoff)."""

    @classmethod
    def command(cls, output: str, entries: Iterable[TapeEntry], elapsed_ms: float) -> Turn:
        """The turn of a comma command: no model ran, ``entries`` are what the command wrote."""
        return cls(
            text=output,
            entries=tuple(entries),
            usage=None,
            status="command",
            model="command",
            run_id="",
            elapsed_ms=elapsed_ms,
        )

    @property
    def entry_ids(self) -> list[int]:
        return [entry.id for entry in self.entries]

    @property
    def ok(self) -> bool:
        return self.status in ("ok", "command")

    def __str__(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        return markdown_html(self.text)


def error_kind(exc: BaseException) -> str:
    """The ``kind`` of the ``error`` entry a failure is recorded as."""
    if isinstance(exc, PromptTooLongError):
        return exc.kind
    if isinstance(exc, ContextLengthError):
        return "context_length_exceeded"
    if isinstance(exc, ModelError):
        return "model_error"
    return type(exc).__name__
