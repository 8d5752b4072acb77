"""``%context``: the view the next turn would send, a recorded turn's request, or the diff of two views."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from IPython.core.error import UsageError
from IPython.display import display

if TYPE_CHECKING:
    from collections.abc import Callable

    from bub_nb.agent.models import Model
    from bub_nb.notebook.session import NotebookSession


class ContextCommands:
    """What ``%context`` shows, as widgets displayed in the running cell."""

    def __init__(self, session: NotebookSession, default_mode: Callable[[], str | None]) -> None:
        self._session = session
        self._default_mode = default_mode

    def run(self, args: argparse.Namespace) -> None:
        from bub_nb.context import TurnOf, parse_run
        from bub_nb.notebook.widgets import ContextDiffView, ContextView, NextRequestView

        next_request = getattr(args, "next", False)
        if sum(given is not None for given in (args.mode, args.turn, args.diff)) > 1:
            raise UsageError("%context takes one of a mode, --turn N or --diff A B")
        if next_request and (args.turn is not None or args.diff is not None):
            raise UsageError("%context --next shows the next turn's request; it takes a mode, not --turn or --diff")
        model = getattr(args, "model", None)
        if next_request:
            display(NextRequestView(self._session.agent(model=model, context=args.mode)))
        elif args.turn is not None:
            display(ContextView(self._session.tape, TurnOf(parse_run(args.turn)), model=self._model(model)))
        elif args.diff is not None:
            display(ContextDiffView(self._session.tape, *args.diff))
        else:
            self.show(args.mode, model)

    def _model(self, spec: str | None) -> Model | None:
        """The model named with ``-m`` (a spec or a notebook variable), else the configured one when its window is
        known: without a window there is nothing to gauge against."""
        from bub_nb.agent.preflight import context_window_of

        if spec:
            return self._session.model(spec)
        if not self._session.settings.model:
            return None
        model = self._session.model(None)
        return model if context_window_of(model) is not None else None

    def show(self, mode: str | None, model: str | None = None) -> None:
        """The view of ``mode`` (the configured mode, else ``last``) as the context widget, gauged against the
        window of ``model`` (else the configured model's)."""
        from bub_nb.context import parse_mode
        from bub_nb.notebook.widgets import ContextView

        strategy = parse_mode(mode or self._default_mode() or "last")
        display(ContextView(self._session.tape, strategy, model=self._model(model)))
