"""IPython magics over the agent and the tape: ``%%bub``, ``%agent``, ``%handoff``, ``%anchors``, ``%context``,
``%memory``, ``%tape``, ``%lesson``, ``%mcp``.

Each magic parses its arguments and calls the plain-Python API; every ``BubNbError`` becomes a
one-line ``UsageError``.
"""

from __future__ import annotations

import sys
from typing import Any

from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments
from traitlets import TraitError, observe
from traitlets.config import Config

from bub_nb.errors import BubNbError
from bub_nb.notebook.commands.agents import AgentCommands
from bub_nb.notebook.commands.context import ContextCommands
from bub_nb.notebook.commands.handoff import HandoffCommands
from bub_nb.notebook.commands.lesson import LESSON, LessonCommands
from bub_nb.notebook.commands.mcp import MCP, McpCommands
from bub_nb.notebook.commands.memory import MemoryCommands
from bub_nb.notebook.commands.tape import TAPE, TapeCommands
from bub_nb.notebook.commands.turn import TurnCommand
from bub_nb.notebook.identity import NotebookIdentity, RenameNotice
from bub_nb.notebook.kernel import NotebookKernel
from bub_nb.notebook.origin import NotebookOrigin
from bub_nb.notebook.parsing.magic_line import parse_line, parser_of, split_line_prompt, split_words
from bub_nb.notebook.recording import CellRecorder
from bub_nb.notebook.session import NotebookSession
from bub_nb.notebook.settings import MagicSettings
from bub_nb.notebook.turn_options import agent_arguments, bub_arguments
from bub_nb.notebook.usage_errors import one_line, usage_errors


@magics_class
class BubMagics(Magics, MagicSettings):
    """bub_nb's magics. Configure with ``%config BubMagics.<trait> = value``."""

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        self.kernel = NotebookKernel(self.shell, self, self._cell_number)
        self.session = NotebookSession(self, lambda: self.ip.user_ns, self.kernel, self.kernel.approve_server)
        self.recorder = CellRecorder(self.shell, lambda: self.session.tape)
        self.origin = NotebookOrigin(self.shell, self.session)
        self.tape_commands = TapeCommands(self.session, self._switch_recording)
        self.memory_commands = MemoryCommands(self.session)
        self.lesson_commands = LessonCommands(self.session)
        self.rename_notice = RenameNotice(self.session)
        self.identity = self.session.identity = NotebookIdentity(self.session)
        self.turn_command = TurnCommand(
            self.shell, self.session, self.rename_notice, self._cell_number, identity=self.identity
        )
        self.handoff_commands = HandoffCommands(self.session, self._cell_number)
        self.context_commands = ContextCommands(self.session, lambda: self.context)
        self.agent_commands = AgentCommands(self.session)
        self.mcp_commands = McpCommands(self.session)

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
    @bub_arguments
    @argument("-o", "--output", metavar="VAR", help="store the answer in this variable; a failed turn clears it")
    @argument("--no-stream", action="store_true", help="show the answer only when it is complete")
    @argument("--agent", metavar="NAME", help="run as this agent (see %%agent); default: the holder")
    @argument("--fresh", action="store_true", help="start this run clean: a handoff anchor before the turn")
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
        self.turn_command.run(args, text, stream=self.stream and not args.no_stream)

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
    @argument("--summarize", action="store_true", help="the model summarizes the phase it closes, citing entries")
    @argument("-m", "--model", default=None, help="with --summarize: the model that summarizes")
    @argument("--preview", action="store_true", help="show what would be written (summary, retention, tokens)")
    @argument("--accept", action="store_true", help="write the handoff previewed under NAME, as it was shown")
    @argument("--to", metavar="AGENT", help="hand the conversation to another agent of the notebook (see %%agent)")
    @argument("--from", dest="sender", metavar="AGENT", help="with --to: the agent handing off (default: the holder)")
    @argument("--reason", help="with --to: why the other agent is needed")
    @argument("--share", action="store_true", help="with --to: both agents may go on (default: transfer)")
    @line_magic("handoff")  # type: ignore[arg-type]  # IPython types only the bare form
    @usage_errors
    def handoff_magic(self, line: str) -> None:
        """Write an anchor: the next turn's view starts there and carries its state. With ``--to AGENT`` hand the
        conversation to another agent of the notebook, on both agents' tapes."""
        self.handoff_commands.handoff(parse_line(self.handoff_magic, line))

    @magic_arguments("anchors")
    @argument("--limit", type=int, default=None, help="only the last N anchors")
    @line_magic("anchors")  # type: ignore[arg-type]  # IPython types only the bare form
    @usage_errors
    def anchors_magic(self, line: str) -> Any:
        """The tape's anchors as a DataFrame: name, id, date, state, entries since, and what each summary cites
        (``sources``), how many of its sentences cite nothing (``uncited``) and what it kept of its phase
        (``retention``: kept/total per kind of artifact, see ``bub_nb.retention``)."""
        return self.handoff_commands.anchors(parse_line(self.anchors_magic, line).limit)

    @magic_arguments("context")
    @argument("mode", nargs="?", default=None, help="last, full, phases, recall, last+recall, window:N, notebook...")
    @argument("--turn", metavar="N", help="what a recorded turn sent: -1 the last turn, #ID its run event, or a run id")
    @argument("--diff", nargs=2, metavar=("A", "B"), help="what changes from view A to B: modes or turn:N")
    @argument("--agent", metavar="NAME", help="that agent's view (see %%agent); default: the holder's")
    @argument("--expand-refs", action="store_true", help="also show the entries a handoff's tape:// references cite")
    @argument(
        "--next",
        nargs="?",
        const=True,
        default=False,
        metavar="PROMPT",
        help="the whole next request: system prompt, memory, view, prompt, tools; for PROMPT if given (its recall)",
    )
    @argument("-m", "--model", help="the model whose context window the tokens are gauged against")
    @line_magic("context")  # type: ignore[arg-type]  # IPython types only the bare form
    @usage_errors
    def context_magic(self, line: str) -> None:
        """Show the view the next turn would send, the whole next request (--next), a recorded turn's request, or the
        diff of two views."""
        self.context_commands.run(parse_line(self.context_magic, line))

    @magic_arguments("agent")
    @argument("name", nargs="?", help="the agent's name: a letter, then letters, digits, '_' or '-'")
    @agent_arguments
    @argument("--lanes", action="store_true", help="draw the agents as lanes, with the handoffs between them")
    @line_magic("agent")  # type: ignore[arg-type]  # IPython types only the bare form
    @usage_errors
    def agent_magic(self, line: str) -> None:
        """Define a named agent of the notebook, on a tape of its own; alone, list the agents and who holds the
        conversation."""
        self.agent_commands.run(parse_line(self.agent_magic, line))

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

    # -- %lesson -------------------------------------------------------------------------------------

    @line_magic("lesson")  # type: ignore[arg-type]  # IPython types only the bare form
    @usage_errors
    @LESSON.documented
    def lesson_magic(self, line: str) -> None:
        self.lesson_commands.run(split_words(line))

    # -- %mcp -----------------------------------------------------------------------------------------

    @line_magic("mcp")  # type: ignore[arg-type]  # IPython types only the bare form
    @usage_errors
    @MCP.documented
    def mcp_magic(self, line: str) -> Any:
        return self.mcp_commands.run(line)

    # -- %tape --------------------------------------------------------------------------------------

    @line_magic("tape")  # type: ignore[arg-type]  # IPython types only the bare form
    @usage_errors
    @TAPE.documented
    def tape_magic(self, line: str) -> Any:
        return self.tape_commands.run(split_words(line))
