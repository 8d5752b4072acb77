"""``%context``: the view the next turn would send (of any agent, its references expanded on request), the whole
next request, a recorded turn's request, or the diff of two views."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from IPython.core.error import UsageError
from IPython.display import display

from bub_nb.notebook.display import show

if TYPE_CHECKING:
    from collections.abc import Callable

    from bub_nb.agent.models import Model
    from bub_nb.notebook.session import NotebookSession
    from bub_nb.tape import Tape


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
        if args.expand_refs and (next_request or args.turn is not None or args.diff is not None):
            raise UsageError(
                "--expand-refs goes with the view the next turn would send, not with --next, --turn or --diff"
            )
        model = getattr(args, "model", None)
        tape = self._tape_of(args.agent)
        if next_request:
            agent = self._session.agent(model=model, context=args.mode, name=args.agent)
            display(NextRequestView(agent) if next_request is True else NextRequestView(agent, str(next_request)))
        elif args.turn is not None:
            display(ContextView(tape, TurnOf(parse_run(args.turn)), model=self._model(model)))
        elif args.diff is not None:
            display(ContextDiffView(tape, *args.diff))
        else:
            self.show(args.mode, model, agent=args.agent, expand_refs=args.expand_refs)

    def _model(self, spec: str | None) -> Model | None:
        """The model named with ``-m`` (a spec or a notebook variable), else the configured one when its window is
        known: without a window there is nothing to gauge against."""
        from bub_nb.agent.models.base import context_window_of

        if spec:
            return self._session.model(spec)
        if not self._session.settings.model:
            return None
        model = self._session.model(None)
        return model if context_window_of(model) is not None else None

    def show(
        self, mode: str | None, model: str | None = None, *, agent: str | None = None, expand_refs: bool = False
    ) -> None:
        """The view of ``mode`` (the agent's mode, the configured mode, else ``last``) as the context widget, gauged
        against the window of ``model`` (else the agent's, else the configured model's); with ``expand_refs`` the
        entries its handoff anchor cites from another agent's tape, after it."""
        from bub_nb.context import build_view, parse_mode
        from bub_nb.context.references import expand_references, references_markdown
        from bub_nb.notebook.widgets import ContextView

        tape = self._tape_of(agent)
        own = self._session.agents.get(agent) if agent else None
        strategy = parse_mode(mode or (own.context if own is not None else None) or self._default_mode() or "last")
        display(ContextView(tape, strategy, model=self._model(model or (own.model if own is not None else None))))
        if expand_refs:
            show(references_markdown(expand_references(tape, build_view(tape, strategy))))

    def _tape_of(self, agent: str | None) -> Tape:
        """The named agent's tape; without a name the holder's, once agents are defined, else the notebook's."""
        return self._session.holders_tape(agent)
