"""``%%bub``: run one agent turn from a cell, streaming the answer and keeping what an interrupt cut short."""

from __future__ import annotations

import argparse
import keyword
import shlex
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from bub_nb.agent.commands import is_command
from bub_nb.errors import BubNbError
from bub_nb.notebook.display import CUT_SHORT, AnswerDisplay, footer, interrupted, show
from bub_nb.notebook.parsing.interpolate import interpolate
from bub_nb.notebook.usage_errors import one_line
from bub_nb.tape.locations import readable_tape_name

if TYPE_CHECKING:
    from collections.abc import Callable

    from bub_nb.notebook.identity import NotebookIdentity, RenameNotice
    from bub_nb.notebook.session import NotebookSession


FRESH_ANCHOR = "run/fresh"
"""The handoff ``%%bub --fresh`` writes before its turn, so the turn's view starts after every earlier run."""


def _earlier_runs(turn: Any, prompt: str) -> list[int]:
    """The entries of the turn's view that are the same prompt sent by an earlier turn."""
    view = turn.view
    if view is None:
        return []
    own = set(turn.entry_ids)
    return [
        source
        for message, source in zip(view.messages, view.sources, strict=False)
        if message.get("role") == "user" and message.get("content") == prompt and source not in own
    ]


class TurnCommand:
    """One ``%%bub`` cell: check the options, run the turn, show the answer, its footer and its notices."""

    def __init__(
        self,
        shell: Any,
        session: NotebookSession,
        rename_notice: RenameNotice,
        cell_number: Callable[[], int | None],
        *,
        identity: NotebookIdentity | None = None,
    ) -> None:
        self._shell = shell
        self._session = session
        self._rename_notice = rename_notice
        self._cell_number = cell_number
        self._said_rerun: set[str] = set()  # the prompts whose earlier run was named once already
        self._before_this_kernel: dict[str, int] = {}  # per tape: its last id when this kernel's first turn ran
        self._identity = identity

    def run(self, args: argparse.Namespace, text: str, *, stream: bool) -> None:
        user_ns = self._shell.user_ns
        # Only what the user typed makes a command: a typed ",cmd {x}" gets x as one quoted word, and a prompt
        # whose filled-in value starts with "," is still a prompt.
        typed_command = is_command(text)
        prompt = interpolate(text, user_ns, quote=shlex.quote if typed_command else None).strip()
        if not prompt:
            raise UsageError("The prompt is empty: write it in the cell under %%bub (or after %bub)")
        if args.output and (not args.output.isidentifier() or keyword.iskeyword(args.output)):
            raise UsageError(f"-o {args.output!r} is not a valid variable name")
        if args.budget is not None and args.budget < 0:
            raise UsageError(f"--budget {args.budget} is not a number of tokens; give one, or 0 for no budget")
        told = self._identity.note() if self._identity is not None else None  # before anything is written
        if told:
            show(told)
        agent = self._session.agent(
            model=args.model,
            context=args.context,
            tools=args.tools,
            cell=self._cell_number(),
            budget=args.budget,
            name=args.agent,
        )
        if getattr(args, "fresh", False):
            # Nothing is rewritten: an anchor starts the view here, so this run sees none of the earlier ones.
            agent.tape.handoff(FRESH_ANCHOR, {"summary": "A fresh run of this cell starts here."})
        renamed = self._rename_notice.text()
        if renamed:
            show(renamed)
        if args.output:
            user_ns.pop(args.output, None)  # a failed turn must not leave an earlier answer there
        before = self._before_this_kernel.setdefault(agent.tape.name, agent.tape.last_id)
        answer = AnswerDisplay(self._shell, stream=stream)
        earlier_turn = agent.last_turn
        try:
            turn = self._session.run_turn(
                agent, prompt, on_delta=answer.add if stream else None, commands=typed_command
            )
        except KeyboardInterrupt:
            agent.abort()
            answer.finish(interrupted(answer.text))
            stopped = agent.last_turn
            for notice in stopped.notices if stopped is not None and stopped is not earlier_turn else ():
                show(f"Warning: {notice}")  # what the turn did on its own before the interrupt (a handoff, say)
            # Raised on, like any Python cell's, so Jupyter cancels the cells queued after this one; raised
            # afresh so the traceback ends in this cell, not in the event loop the turn happened to be in.
            raise KeyboardInterrupt from None
        except BubNbError as exc:
            if answer.text:
                answer.finish(f"{answer.text}\n\n{CUT_SHORT}")
            else:
                answer.discard()
            failed = getattr(exc, "turn", None)
            for notice in failed.notices if failed is not None else ():  # what the turn wrote before it failed
                show(f"Warning: {notice}")
            raise UsageError(one_line(exc)) from None
        anchor = turn.view.anchor.name if turn.view is not None and turn.view.anchor is not None else None
        metadata = {"bub_nb": {"tape": agent.tape.name, "entry_ids": turn.entry_ids, "anchor": anchor}}
        answer.finish(turn.text, footer=footer(turn, anchor, readable_tape_name(agent.tape)), metadata=metadata)
        for notice in turn.notices:
            show(f"Warning: {notice}")
        # Only an earlier run of the notebook counts (Run All again): two cells of one run may ask the same thing.
        earlier = [entry_id for entry_id in _earlier_runs(turn, prompt) if entry_id <= before]
        if earlier and prompt not in self._said_rerun:
            self._said_rerun.add(prompt)
            show(
                f"This cell ran before: its view holds an earlier run of the same prompt (entry #{earlier[0]}). "
                "`%lesson start NAME` starts each run of the notebook on a new tape; `%%bub --fresh` starts this "
                "run after a new anchor."
            )
        if args.output and turn.ok:
            user_ns[args.output] = turn.text
