"""``%handoff`` and ``%anchors``: write an anchor, and list the tape's anchors with what their summaries kept."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, cast

from IPython.core.error import UsageError
from IPython.core.getipython import get_ipython

from bub_nb.agent.phase_handoff import pending_preview
from bub_nb.errors import AnchorNotFoundError
from bub_nb.markup import code_span
from bub_nb.notebook.display import handoff_confirmation, is_summary, preview_markdown, rich_frontend, show
from bub_nb.notebook.parsing.magic_line import parse_state
from bub_nb.tape.names import MAIN_AGENT

if TYPE_CHECKING:
    from collections.abc import Callable

    import pandas as pd

    from bub_nb.agent.phase_handoff import HandoffPreview
    from bub_nb.notebook.session import NotebookSession
    from bub_nb.tape import Tape, TapeEntry

HANDOFF_USAGE = (
    "%handoff NAME [key=value ...] [--state JSON] [--summarize] [--preview | --accept] "
    "[--to AGENT [--reason TEXT] [--share]]"
)

_INTENTION_KEYS = ("summary", "next_steps", "context_summary")


class HandoffCommands:
    """What ``%handoff`` and ``%anchors`` do on the session's tape."""

    def __init__(self, session: NotebookSession, cell_number: Callable[[], int | None]) -> None:
        self._session = session
        self._cell_number = cell_number

    def handoff(self, args: argparse.Namespace) -> None:
        """Write the anchor ``args.name`` (summarized by the model with ``--summarize``) and confirm it; with
        ``--preview`` show what would be written and write nothing, with ``--accept`` write that preview."""
        if not args.name:
            raise UsageError(f"%handoff needs an anchor NAME: {HANDOFF_USAGE}")
        if args.accept:
            return self._accept(args)
        state = parse_state(args.pairs, args.state)
        if args.to is not None:
            if args.preview:
                raise UsageError(f"--preview shows a handoff on this tape, not one --to an agent: {HANDOFF_USAGE}")
            self.hand_to_agent(args, state)
            return
        pairs = (("--from", args.sender), ("--reason", args.reason), ("--share", args.share))
        given = [flag for flag, on in pairs if on]
        if given:
            raise UsageError(f"{', '.join(given)} go with --to AGENT, a handoff to another agent: {HANDOFF_USAGE}")
        tape = self._holders_tape()
        earlier = self._anchor_named(tape, args.name)
        if (args.summarize or args.preview) and "summarize" in state:
            raise UsageError("With --summarize or --preview, 'summarize' cannot also be a state key; rename it")
        if args.preview:
            handoff = self._session.phase_handoff(model=args.model, cell=self._cell_number())
            return self._show_preview(handoff.preview(args.name, summarize=args.summarize, **state))
        if args.summarize:
            handoff = self._session.phase_handoff(model=args.model, cell=self._cell_number())
            written = handoff.write(args.name, summarize=True, **state)
            anchor = next(entry for entry in written if entry.kind == "anchor")
            state = anchor.payload.get("state") or {}
        else:
            anchor, _event = tape.handoff(args.name, state or None, source="notebook")
        show(handoff_confirmation(tape, anchor, state, earlier), raw_state=state if is_summary(state) else None)

    def _holders_tape(self) -> Tape:
        """Where a plain handoff goes: the notebook's tape, or once agents are defined the holder's, where the
        next ``%%bub`` cell runs."""
        return self._session.holders_tape()

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
            model = self._session.phase_handoff(model=args.model, agent=sender).model
        done = team.handoff(
            args.name,
            to=args.to,
            sender=args.sender,  # the team works out the holder again under the notebook's lock
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
            f"Handoff: `{done.sender}` handed anchor {done.name} to `{done.receiver}` ({done.ownership}). {moved}",
            f"- reason: {content.get('reason') or '—'}",
            f"- summary: {content.get('summary') or '—'}",
            f"- references into `{done.sender}`'s tape: {', '.join(code_span(ref) for ref in refs) or 'none'}",
            f"- `{done.receiver}`'s next view starts at its anchor {done.name} (`%context --agent {done.receiver}`)",
        ]
        show("\n".join(lines))

    def _show_preview(self, preview: HandoffPreview) -> None:
        show(preview_markdown(preview), raw_state=preview.state if is_summary(preview.state) else None)
        if rich_frontend(get_ipython()):
            from IPython.display import display

            from bub_nb.notebook.widgets.handoff_preview import accept_button

            display(accept_button(preview, lambda written: self._written(preview, written)))

    def _accept(self, args: argparse.Namespace) -> None:
        """Write the handoff previewed under ``args.name``, as it was shown."""
        others = (args.pairs, args.state, args.summarize, args.preview, args.model, args.to, args.sender, args.reason)
        if any(others) or args.share:
            raise UsageError(
                f"%handoff {args.name} --accept writes the preview as it was shown: it takes no state, "
                "--summarize, --preview, -m or --to"
            )
        tape = self._holders_tape()
        # Previews are kept per tape: the one the next cell runs on, else the notebook's own.
        preview = pending_preview(tape, args.name) or pending_preview(self._session.tape, args.name)
        if preview is None:
            raise UsageError(
                f"No preview of handoff {args.name!r} on tape {tape.name!r} to accept: "
                f"run %handoff {args.name} --summarize --preview first"
            )
        show(self._written(cast("HandoffPreview", preview), preview.accept()))

    def _written(self, preview: HandoffPreview, written: list[TapeEntry]) -> str:
        """The confirmation of an accepted preview."""
        anchor = next(entry for entry in written if entry.kind == "anchor")
        earlier = [a.id for a in preview.tape.anchors(limit=None) if a.name == preview.name and a.id < anchor.id]
        return handoff_confirmation(preview.tape, anchor, preview.state, earlier[-1] if earlier else None)

    def anchors(self, limit: int | None) -> pd.DataFrame:
        """The anchors of the tape the next turn runs on (the holder's, once the notebook has agents) as a frame,
        with a ``retention`` column for the ones that carry a summary."""
        import pandas as pd

        from bub_nb.context.retention import has_summary, retention_lines
        from bub_nb.tape.reports.transcript import anchors_frame

        tape = self._session.holders_tape()
        frame = anchors_frame(tape)
        lines = retention_lines(tape)
        frame["retention"] = frame["id"].map(lines).astype("string")
        # The summary as text beside the raw state: what a reader reads first.
        texts = [state.get("summary") if has_summary(state) else None for state in frame["state"]]
        frame.insert(frame.columns.get_loc("state"), "summary", pd.array(texts, dtype="string"))
        return frame if limit is None else frame.tail(limit)

    def _anchor_named(self, tape: Tape, name: str) -> int | None:
        """The id of the newest anchor called ``name`` on the tape, if there is one."""
        try:
            return tape.find_anchor(name).id
        except AnchorNotFoundError:
            return None
