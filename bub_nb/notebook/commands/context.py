"""``%context``: the view the next turn would send, a recorded turn's request, or the diff of two views."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from IPython.core.error import UsageError
from IPython.display import display

if TYPE_CHECKING:
    from collections.abc import Callable

    from bub_nb.notebook.session import NotebookSession


class ContextCommands:
    """What ``%context`` shows, as widgets displayed in the running cell."""

    def __init__(self, session: NotebookSession, default_mode: Callable[[], str | None]) -> None:
        self._session = session
        self._default_mode = default_mode

    def run(self, args: argparse.Namespace) -> None:
        from bub_nb.context import TurnOf, parse_run
        from bub_nb.notebook.widgets import ContextDiffView, ContextView

        if sum(given is not None for given in (args.mode, args.turn, args.diff)) > 1:
            raise UsageError("%context takes one of a mode, --turn N or --diff A B")
        if args.turn is not None:
            display(ContextView(self._session.tape, TurnOf(parse_run(args.turn))))
        elif args.diff is not None:
            display(ContextDiffView(self._session.tape, *args.diff))
        else:
            self.show(args.mode)

    def show(self, mode: str | None) -> None:
        """The view of ``mode`` (the configured mode, else ``last``) as the context widget."""
        from bub_nb.context import parse_mode
        from bub_nb.notebook.widgets import ContextView

        display(ContextView(self._session.tape, parse_mode(mode or self._default_mode() or "last")))
