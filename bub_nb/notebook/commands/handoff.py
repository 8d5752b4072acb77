"""``%handoff`` and ``%anchors``: write an anchor, and list the tape's anchors with what their summaries kept."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from bub_nb.errors import AnchorNotFoundError
from bub_nb.notebook.display import handoff_confirmation, show
from bub_nb.notebook.parsing.magic_line import parse_state
from bub_nb.tape.names import MAIN_AGENT

if TYPE_CHECKING:
    from collections.abc import Callable

    import pandas as pd

    from bub_nb.notebook.session import NotebookSession
    from bub_nb.tape import Tape

HANDOFF_USAGE = "%handoff NAME [key=value ...] [--state JSON] [--summarize] [--to AGENT [--reason TEXT] [--share]]"

_INTENTION_KEYS = ("summary", "next_steps", "context_summary")


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
        if args.to is not None:
            self.hand_to_agent(args, state)
            return
        pairs = (("--from", args.sender), ("--reason", args.reason), ("--share", args.share))
        given = [flag for flag, on in pairs if on]
        if given:
            raise UsageError(f"{', '.join(given)} go with --to AGENT, a handoff to another agent: {HANDOFF_USAGE}")
        tape = self._holders_tape()
        earlier = self._anchor_named(tape, args.name)
        if args.summarize:
            if "summarize" in state:
                raise UsageError("With --summarize, 'summarize' cannot also be a state key; rename it")
            agent = self._session.agent(model=args.model, cell=self._cell_number())
            written = agent.handoff(args.name, summarize=True, **state)
            anchor = next(entry for entry in written if entry.kind == "anchor")
            state = anchor.payload.get("state") or {}
        else:
            anchor, _event = tape.handoff(args.name, state or None, source="notebook")
        show(handoff_confirmation(tape, anchor, state, earlier))

    def _holders_tape(self) -> Tape:
        """Where a plain handoff goes: the notebook's tape, or once agents are defined the holder's, where the
        next ``%%bub`` cell runs."""
        session = self._session
        if not session.agents:
            return session.tape
        team = session.team()
        return team.tape_of(team.holder() or MAIN_AGENT)

    def hand_to_agent(self, args: argparse.Namespace, state: dict[str, Any]) -> None:
        """``--to AGENT``: the handoff between agents, written on both tapes, and what it moved."""
        texts = {key: state.pop(key) for key in _INTENTION_KEYS if key in state}
        for key, value in texts.items():
            if not isinstance(value, str):
                raise UsageError(f"{key}= is text, got {value!r}")
        team = self._session.team()
        sender = args.sender or team.holder() or MAIN_AGENT
        model = None
        if args.summarize:
            model = self._session.agent(model=args.model, name=sender).model
        done = team.handoff(
            args.name,
            to=args.to,
            sender=sender,
            reason=args.reason,
            share=args.share,
            summarize=args.summarize,
            state=state or None,
            model=model,
            meta={"cell": self._cell_number(), "source": "notebook"},
            **texts,
        )
        record = done.record
        content = record["content"]
        refs = content.get("refs") or []
        moved = (
            f"`{done.receiver}` holds the conversation now; `{done.sender}` waits until it is handed back."
            if done.ownership == "transfer"
            else f"Both `{done.sender}` and `{done.receiver}` may go on (shared)."
        )
        lines = [
            f"🤝 `{done.sender}` handed ⚓ {done.name} to `{done.receiver}` ({done.ownership}). {moved}",
            f"- reason: {content.get('reason') or '—'}",
            f"- summary: {content.get('summary') or '—'}",
            f"- references into `{done.sender}`'s tape: {', '.join(f'`{ref}`' for ref in refs) or 'none'}",
            f"- `{done.receiver}`'s next view starts at its ⚓ {done.name} (`%context --agent {done.receiver}`)",
        ]
        show("\n".join(lines))

    def anchors(self, limit: int | None) -> pd.DataFrame:
        """The anchors as a frame, with a ``retention`` column for the ones that carry a summary."""
        from bub_nb.context.retention import retention_lines
        from bub_nb.tape.reports.transcript import anchors_frame

        frame = anchors_frame(self._session.tape)
        lines = retention_lines(self._session.tape)
        frame["retention"] = frame["id"].map(lines).astype("string")
        return frame if limit is None else frame.tail(limit)

    def _anchor_named(self, tape: Tape, name: str) -> int | None:
        """The id of the newest anchor called ``name`` on the tape, if there is one."""
        try:
            return tape.find_anchor(name).id
        except AnchorNotFoundError:
            return None
