"""``%handoff`` and ``%anchors``: write an anchor, and list the tape's anchors with what their summaries kept."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from IPython.core.error import UsageError

from bub_nb.errors import AnchorNotFoundError
from bub_nb.notebook.display import handoff_confirmation, show
from bub_nb.notebook.parsing.magic_line import parse_state

if TYPE_CHECKING:
    from collections.abc import Callable

    import pandas as pd

    from bub_nb.notebook.session import NotebookSession

HANDOFF_USAGE = "%handoff NAME [key=value ...] [--state JSON] [--summarize]"


class HandoffCommands:
    """What ``%handoff`` and ``%anchors`` do on the session's tape."""

    def __init__(self, session: NotebookSession, cell_number: Callable[[], int | None]) -> None:
        self._session = session
        self._cell_number = cell_number

    def handoff(self, args: argparse.Namespace) -> None:
        """Write the anchor ``args.name`` (summarised by the model with ``--summarize``) and confirm it."""
        if not args.name:
            raise UsageError(f"%handoff needs an anchor NAME: {HANDOFF_USAGE}")
        state = parse_state(args.pairs, args.state)
        earlier = self._anchor_named(args.name)
        if args.summarize:
            if "summarize" in state:
                raise UsageError("With --summarize, 'summarize' cannot also be a state key; rename it")
            agent = self._session.agent(model=args.model, cell=self._cell_number())
            written = agent.handoff(args.name, summarize=True, **state)
            anchor = next(entry for entry in written if entry.kind == "anchor")
            state = anchor.payload.get("state") or {}
        else:
            anchor, _event = self._session.tape.handoff(args.name, state or None, source="notebook")
        show(handoff_confirmation(self._session.tape, anchor, state, earlier))

    def anchors(self, limit: int | None) -> pd.DataFrame:
        """The anchors as a frame, with a ``retention`` column for the ones that carry a summary."""
        from bub_nb.context.retention import retention_lines
        from bub_nb.tape.reports.transcript import anchors_frame

        frame = anchors_frame(self._session.tape)
        lines = retention_lines(self._session.tape)
        frame["retention"] = frame["id"].map(lines).astype("string")
        return frame if limit is None else frame.tail(limit)

    def _anchor_named(self, name: str) -> int | None:
        """The id of the newest anchor called ``name`` on the tape, if there is one."""
        try:
            return self._session.tape.find_anchor(name).id
        except AnchorNotFoundError:
            return None
