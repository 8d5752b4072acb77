"""IPython magics over the agent and the tape: ``%%bub``, ``%handoff``, ``%anchors``, ``%context``, ``%memory``,
``%tape``.

Each magic parses its arguments and calls the plain-Python API; every ``BubNbError`` becomes a
one-line ``UsageError``.
"""

from __future__ import annotations

import json
import keyword
import sys
from typing import Any

from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments
from IPython.display import display
from traitlets import TraitError, observe
from traitlets.config import Config

from bub_nb.errors import BubNbError
from bub_nb.notebook.display import AnswerDisplay, show
from bub_nb.notebook.interpolate import interpolate
from bub_nb.notebook.kernel import NotebookKernel
from bub_nb.notebook.magic_line import parse_line, parse_state, parser_of, split_line_prompt, split_words
from bub_nb.notebook.memory_commands import MemoryCommands
from bub_nb.notebook.origin import NotebookOrigin
from bub_nb.notebook.outcome import CUT_SHORT, footer, interrupted
from bub_nb.notebook.recording import CellRecorder
from bub_nb.notebook.session import NotebookSession
from bub_nb.notebook.settings import MagicSettings
from bub_nb.notebook.tape_commands import TapeCommands, with_tape_help
from bub_nb.notebook.usage_errors import one_line, usage_errors


@magics_class
class BubMagics(Magics, MagicSettings):
    """bub_nb's magics. Configure with ``%config BubMagics.<trait> = value``."""

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        self.kernel = NotebookKernel(self.shell, self, self._cell_number)
        self.session = NotebookSession(self, lambda: self.ip.user_ns, self.kernel)
        self.recorder = CellRecorder(self.shell, lambda: self.session.tape)
        self.origin = NotebookOrigin(self.shell, self.session)
        self.tape_commands = TapeCommands(self.session, self._switch_recording)
        self.memory_commands = MemoryCommands(self.session)

    @property
    def ip(self) -> InteractiveShell:
        """The shell the magics are registered with."""
        assert self.shell is not None, "BubMagics needs a shell; load it with %load_ext bub_nb"
        return self.shell

    def update_config(self, config: Config) -> None:
        """``%config`` on these traits: a refused value keeps the old one and says why in one line.

        Said here rather than raised: ``%config`` would log it through the root logger, which configures
        logging for the whole kernel, and every later turn's failure would print a log line in its cell.
        """
        try:
            super().update_config(config)
        except (TraitError, BubNbError) as exc:
            print(one_line(exc), file=sys.stderr)

    @observe("prices")
    def _prices_changed(self, change: Any) -> None:
        from bub_nb.tape.reports.prices import set_prices

        set_prices(change["new"] or None)  # an empty table goes back to BUB_PRICES

    @observe("otlp_endpoint")
    def _otlp_endpoint_changed(self, change: Any) -> None:
        from bub_nb.agent import default_pipeline
        from bub_nb.agent.live_export import switch_live_export

        switch_live_export(default_pipeline(), change["new"] or None)

    @observe("tape", "home", "store")
    def _tape_changed(self, change: Any) -> None:
        if hasattr(self, "session"):
            self.session.forget_tape()

    @observe("record")
    def _record_changed(self, change: Any) -> None:
        if not hasattr(self, "recorder"):
            return
        if change["new"]:
            try:
                self.recorder.start()
            except BubNbError:
                self.set_trait("record", False)  # not recording, so not set
                raise
        else:
            self.recorder.stop()
        if self.shell is not None:  # the shell's config outlives this instance: %reload_ext keeps recording
            self.shell.config.BubMagics.record = bool(change["new"])

    def _switch_recording(self, on: bool) -> None:
        if on:
            self.recorder.start()  # a tape that cannot take the anchor refuses here, before the switch
        self.record = on

    # -- %%bub ----------------------------------------------------------------------------------

    @no_var_expand  # only bub_nb's own {name} interpolation applies: "$5" and "{"a": 1}" stay as typed
    @magic_arguments("bub")
    @argument("-m", "--model", help="model for this turn, e.g. offline or openai:gpt-4o-mini")
    @argument("--context", help="view mode: last, full, phases, window:N, notebook or an anchor name")
    @argument("-o", "--output", metavar="VAR", help="store the answer in this variable; a failed turn clears it")
    @argument("--no-stream", action="store_true", help="show the answer only when it is complete")
    @argument("--tools", help="comma-separated tools: builtin names, globs like memory.*, or notebook functions")
    @argument("--budget", type=int, metavar="N", help="refuse a prompt estimated over N tokens; 0: no budget")
    @argument("prompt", nargs="*", help="with %%bub, the prompt itself")
    @line_cell_magic("bub")  # type: ignore[arg-type]  # IPython types only the bare form
    @usage_errors
    def bub_magic(self, line: str, cell: str | None = None) -> None:
        """Run one agent turn on this notebook's tape: ``%%bub`` with the prompt in the cell.

        ``{name}``, ``{obj.attr}`` and ``{seq[0]}`` are filled in from the notebook (``{{`` for a
        literal brace). A prompt starting with ``,`` is a command (``,help``) and never reaches the model.
        An interrupt keeps the partial answer on the tape, then stops the cell like any Python cell.
        """
        if cell is None:
            parser = parser_of(self.bub_magic)
            options, text = split_line_prompt(line, parser)
            args = parser.parse_intermixed_args(options)
        else:
            args, text = parse_line(self.bub_magic, line), cell
            if args.prompt:
                raise UsageError(f"%%bub takes the prompt from the cell; unexpected words: {' '.join(args.prompt)!r}")
        prompt = interpolate(text, self.ip.user_ns).strip()
        if not prompt:
            raise UsageError("The prompt is empty: write it in the cell under %%bub (or after %bub)")
        if args.output and (not args.output.isidentifier() or keyword.iskeyword(args.output)):
            raise UsageError(f"-o {args.output!r} is not a valid variable name")
        if args.budget is not None and args.budget < 0:
            raise UsageError(f"--budget {args.budget} is not a number of tokens; give one, or 0 for no budget")
        agent = self.session.agent(
            model=args.model, context=args.context, tools=args.tools, cell=self._cell_number(), budget=args.budget
        )
        stream = self.stream and not args.no_stream
        if args.output:
            self.ip.user_ns.pop(args.output, None)  # a failed turn must not leave an earlier answer there
        answer = AnswerDisplay(self.shell, stream=stream)
        try:
            turn = self.session.run_turn(agent, prompt, on_delta=answer.add if stream else None)
        except KeyboardInterrupt:
            agent.abort()
            answer.finish(interrupted(answer.text))
            # Raised on, like any Python cell's, so Jupyter cancels the cells queued after this one; raised
            # afresh so the traceback ends in this cell, not in the event loop the turn happened to be in.
            raise KeyboardInterrupt from None
        except BubNbError as exc:
            if answer.text:
                answer.finish(f"{answer.text}\n\n{CUT_SHORT}")
            failed = getattr(exc, "turn", None)
            for notice in failed.notices if failed is not None else ():  # what the turn wrote before it failed
                show(f"⚠️ {notice}")
            raise UsageError(one_line(exc)) from None
        anchor = turn.view.anchor.name if turn.view is not None and turn.view.anchor is not None else None
        metadata = {"bub_nb": {"tape": agent.tape.name, "entry_ids": turn.entry_ids, "anchor": anchor}}
        answer.finish(turn.text, footer=footer(turn, anchor), metadata=metadata)
        for notice in turn.notices:
            show(f"⚠️ {notice}")
        if args.output and turn.ok:
            self.ip.user_ns[args.output] = turn.text
        if self.show_context:
            self._show_context(None)

    def _cell_number(self) -> int | None:
        """The running cell's In[n]: IPython counts up before or after running, depending on its version."""
        result = getattr(self.ip.displayhook, "exec_result", None)
        count = getattr(result, "execution_count", None)
        return count if isinstance(count, int) else self.ip.execution_count

    # -- %handoff, %anchors, %context, %memory ----------------------------------------------------

    @magic_arguments("handoff")
    @argument("name", nargs="?", help="anchor name, e.g. lesson/1 or phase/design-done")
    @argument("pairs", nargs="*", help="state as key=value (values are read as JSON when they parse)")
    @argument("--state", help="state as a JSON object; key=value pairs are added on top")
    @argument("--summarize", action="store_true", help="the model summarises the phase it closes, citing entries")
    @argument("-m", "--model", default=None, help="with --summarize: the model that summarises")
    @line_magic("handoff")  # type: ignore[arg-type]  # IPython types only the bare form
    @usage_errors
    def handoff_magic(self, line: str) -> None:
        """Write an anchor: the next turn's view starts there and carries its state."""
        args = parse_line(self.handoff_magic, line)
        if not args.name:
            raise UsageError(
                "%handoff needs an anchor NAME: %handoff NAME [key=value ...] [--state JSON] [--summarize]"
            )
        state = parse_state(args.pairs, args.state)
        if args.summarize:
            if "summarize" in state:
                raise UsageError("With --summarize, 'summarize' cannot also be a state key; rename it")
            agent = self.session.agent(model=args.model, cell=self._cell_number())
            written = agent.handoff(args.name, summarize=True, **state)
            anchor = next(entry for entry in written if entry.kind == "anchor")
            state = anchor.payload.get("state") or {}
        else:
            anchor, _event = self.session.tape.handoff(args.name, state or None, source="notebook")
        shown = json.dumps(state, indent=2, ensure_ascii=False, default=str) if state else "(no state)"
        show(
            f"⚓ Handoff **{anchor.name}** written as entry #{anchor.id} on tape `{self.session.tape.name}`. "
            f"The next turn's view starts here and carries:\n\n```json\n{shown}\n```"
        )

    @magic_arguments("anchors")
    @argument("--limit", type=int, default=None, help="only the last N anchors")
    @line_magic("anchors")  # type: ignore[arg-type]  # IPython types only the bare form
    @usage_errors
    def anchors_magic(self, line: str) -> Any:
        """The tape's anchors as a DataFrame: name, id, date, state, entries since, and what each summary cites
        (``sources``) and how many of its sentences cite nothing (``uncited``)."""
        from bub_nb.tape.reports.transcript import anchors_frame

        args = parse_line(self.anchors_magic, line)
        frame = anchors_frame(self.session.tape)
        return frame if args.limit is None else frame.tail(args.limit)

    @magic_arguments("context")
    @argument("mode", nargs="?", default=None, help="last, full, phases, window:N, notebook or an anchor name")
    @argument("--turn", metavar="N", help="what a recorded turn sent: -1 the last turn, #ID its run event, or a run id")
    @argument("--diff", nargs=2, metavar=("A", "B"), help="what changes from view A to B: modes or turn:N")
    @line_magic("context")  # type: ignore[arg-type]  # IPython types only the bare form
    @usage_errors
    def context_magic(self, line: str) -> None:
        """Show the view the next turn would send, a recorded turn's request, or the diff of two views."""
        from bub_nb.context import TurnOf, parse_run
        from bub_nb.notebook.widgets import ContextDiffView, ContextView

        args = parse_line(self.context_magic, line)
        if sum(given is not None for given in (args.mode, args.turn, args.diff)) > 1:
            raise UsageError("%context takes one of a mode, --turn N or --diff A B")
        if args.turn is not None:
            display(ContextView(self.session.tape, TurnOf(parse_run(args.turn))))
        elif args.diff is not None:
            display(ContextDiffView(self.session.tape, *args.diff))
        else:
            self._show_context(args.mode)

    def _show_context(self, mode: str | None) -> None:
        from bub_nb.context import parse_mode
        from bub_nb.notebook.widgets import ContextView

        display(ContextView(self.session.tape, parse_mode(mode or self.context or "last")))

    @magic_arguments("memory")
    @argument("action", nargs="?", default="show", help="show | save TEXT | daily TEXT | clear | prune")
    @argument("text", nargs="*", help="the text to save or append")
    @argument("--date", help="with daily: the day (YYYY-MM-DD), default today")
    @line_magic("memory")  # type: ignore[arg-type]  # IPython types only the bare form
    @usage_errors
    def memory_magic(self, line: str) -> None:
        """Work on the tape's memory zone: show it, save long-term memory, add a daily note, clear it."""
        args = parse_line(self.memory_magic, line)
        self.memory_commands.run(args.action, " ".join(args.text).strip(), args.date)

    # -- %tape --------------------------------------------------------------------------------------

    @line_magic("tape")  # type: ignore[arg-type]  # IPython types only the bare form
    @usage_errors
    @with_tape_help
    def tape_magic(self, line: str) -> Any:
        return self.tape_commands.run(split_words(line))
