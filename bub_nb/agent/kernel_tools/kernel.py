"""What the kernel tools need from a kernel, as a protocol; a plain namespace is one, an IPython kernel another."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class Decision:
    """Whether code may run: ``kind`` is ``approved``, ``denied`` (by the user) or ``refused`` (no one to ask)."""

    kind: str
    reason: str = ""

    @property
    def approved(self) -> bool:
        return self.kind == "approved"


APPROVED = Decision("approved", "allowed without asking")


@dataclass(frozen=True, slots=True)
class CellRecord:
    """One cell that ran: its number, its source, the text of its result and its error, when it had them."""

    number: int
    source: str
    output: str | None = None
    error: str | None = None


@runtime_checkable
class Kernel(Protocol):
    """The notebook as the kernel tools see it."""

    def namespace(self) -> dict[str, Any]:
        """The user's namespace itself (code runs in it)."""

    def hidden_names(self) -> Collection[str]:
        """Names the kernel defined itself, left out of ``notebook.vars``."""

    def cells(self, limit: int) -> list[CellRecord]:
        """The last ``limit`` cells that ran, oldest first."""

    def consent(self, code: str) -> Awaitable[Decision]:
        """Ask whether ``code`` may run; waits for the user's answer."""

    def transform(self, code: str) -> str:
        """Notebook syntax made Python (``%magic`` lines)."""

    def show(self, figure: Any) -> None:
        """Display a figure where the user sees it."""

    def cell_number(self) -> int | None:
        """The number of the cell running now, for the cell event of code that ran."""


async def _approve_all(code: str) -> Decision:
    return APPROVED


@dataclass
class NamespaceKernel:
    """A plain dict as the kernel, for scripts and tests; ``consent`` decides on code (default: approve)."""

    variables: dict[str, Any]
    consent_to: Callable[[str], Awaitable[Decision]] = _approve_all
    history: list[CellRecord] = field(default_factory=list)

    def namespace(self) -> dict[str, Any]:
        return self.variables

    def hidden_names(self) -> Collection[str]:
        return ("__builtins__",)

    def cells(self, limit: int) -> list[CellRecord]:
        return self.history[-limit:] if limit > 0 else []

    def consent(self, code: str) -> Awaitable[Decision]:
        return self.consent_to(code)

    def transform(self, code: str) -> str:
        return code

    def show(self, figure: Any) -> None:
        return None

    def cell_number(self) -> int | None:
        return None
