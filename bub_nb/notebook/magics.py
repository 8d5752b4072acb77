"""IPython magics over the agent and the tape: ``%%bub``, ``%handoff``, ``%anchors``, ``%context``, ``%memory``,
``%tape``.

Each magic parses its arguments and calls the plain-Python API; every ``BubNbError`` becomes a
one-line ``UsageError``.
"""

from __future__ import annotations

import functools
import json
import keyword
import os
from collections.abc import Callable
from typing import Any, TypeVar, cast

import orjson
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments
from IPython.display import display
from traitlets import Bool, Dict, Int, List, TraitError, Unicode, default, observe, validate

from bub_nb.errors import BubNbError
from bub_nb.notebook.display import AnswerDisplay, show
from bub_nb.notebook.interpolate import interpolate
from bub_nb.notebook.magic_line import split_line_prompt, split_words
from bub_nb.notebook.memory_commands import MemoryCommands
from bub_nb.notebook.origin import NotebookOrigin
from bub_nb.notebook.outcome import CUT_SHORT, footer, interrupted
from bub_nb.notebook.recording import CellRecorder
from bub_nb.notebook.session import NotebookSession
from bub_nb.notebook.tape_commands import TapeCommands
from bub_nb.tape._lines import load_json
from bub_nb.tape.redact import redact_text

Method = TypeVar("Method", bound=Callable[..., Any])


def usage_errors(method: Method) -> Method:
    """Turn bub_nb's errors into one-line ``UsageError``s: no traceback from the internals.

    Only errors bub_nb raises on purpose are converted (and the magics raise ``UsageError`` for their own
    parse errors); any other exception is a bug and keeps its traceback.
    """

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except BubNbError as exc:
            raise UsageError(_one_line(exc)) from None

    return cast(Method, wrapper)


def _one_line(exc: BaseException) -> str:
    """The first line of an error, with any API key an endpoint echoed scrubbed out (outputs are saved)."""
    text = str(exc).strip()
    return redact_text(text.splitlines()[0] if text else type(exc).__name__)


def parse_line(magic: Callable[..., Any], line: str) -> Any:
    """Parse a magic's arguments with shell quoting, so ``summary='two words'`` stays one value."""
    return magic_arguments_parse(magic, split_words(line))


def magic_arguments_parse(magic: Callable[..., Any], argv: list[str]) -> Any:
    return magic.parser.parse_intermixed_args(argv)  # type: ignore[attr-defined]


def parse_state(pairs: list[str], state_json: str | None) -> dict[str, Any]:
    """``key=value`` words (values read as JSON when they parse, else text) over an optional ``--state`` object."""
    state: dict[str, Any] = {}
    if state_json:
        try:
            loaded = load_json(state_json)  # exact: integers beyond 64 bits stay integers
        except ValueError as exc:
            raise UsageError(f"--state {state_json!r} is not valid JSON: {exc}") from None
        if not isinstance(loaded, dict):
            raise UsageError(f'--state {state_json!r} must be a JSON object, like \'{{"summary": "..."}}\'')
        state.update(loaded)
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if not equals or not key.isidentifier():
            raise UsageError(f"{pair!r} is not key=value (for example summary='what was done')")
        try:
            state[key] = orjson.loads(value) if not value.lstrip("-").isdigit() else int(value)
        except (orjson.JSONDecodeError, ValueError):
            state[key] = value
    return state


@magics_class
class BubMagics(Magics):
    """bub_nb's magics. Configure with ``%config BubMagics.<trait> = value``."""

    model = Unicode(help="Model: 'offline', 'openai:<model>' (env BUB_MODEL).").tag(config=True)
    context = Unicode(help="Default view: 'last', 'full', 'phases', 'window:N', 'notebook' or an anchor name.").tag(
        config=True
    )
    home = Unicode(help="Bub home; tapes live in <home>/tapes (env BUB_HOME, default ~/.bub).").tag(config=True)
    tape = Unicode(help="Tape name or .jsonl path; empty means this notebook's tape.").tag(config=True)
    store = Unicode(help="A postgresql:// DSN to keep tapes in a database (env BUB_STORE); empty: files.").tag(
        config=True
    )
    max_steps = Int(help="Model calls a turn may make before it stops (env BUB_MAX_STEPS).").tag(config=True)
    stream = Bool(True, help="Stream answers into the cell as they arrive.").tag(config=True)
    system_prompt = Unicode("", help="Extra instructions added to the system prompt.").tag(config=True)
    show_context = Bool(False, help="Draw the context strip under each answer.").tag(config=True)
    tools = List(Unicode(), help="Default --tools selection (empty: every builtin tool).").tag(config=True)
    budget = Int(0, help="Refuse a turn whose prompt is estimated over this many tokens (0: no budget).").tag(
        config=True
    )
    otlp_endpoint = Unicode(
        "",
        help="Send each turn to this OTLP/HTTP endpoint as OpenTelemetry GenAI spans as it ends; "
        "empty: only when OTEL_EXPORTER_OTLP_ENDPOINT is set.",
    ).tag(config=True)
    prices = Dict(
        help='Prices per million tokens per model, e.g. {"gpt-4o-mini": {"input": 0.15, "output": 0.6}}.'
    ).tag(config=True)

    @default("model")
    def _default_model(self) -> str:
        return os.environ.get("BUB_MODEL", "") or "offline"

    @default("context")
    def _default_context(self) -> str:
        return os.environ.get("BUB_CONTEXT", "") or "last"

    @default("home")
    def _default_home(self) -> str:
        return os.environ.get("BUB_HOME", "")

    @default("store")
    def _default_store(self) -> str:
        return os.environ.get("BUB_STORE", "")

    @default("tape")
    def _default_tape(self) -> str:
        return os.environ.get("BUB_TAPE", "")

    @default("max_steps")
    def _default_max_steps(self) -> int:
        raw = os.environ.get("BUB_MAX_STEPS", "")
        return int(raw) if raw.isdigit() and int(raw) > 0 else 8

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        self.session = NotebookSession(self, lambda: self.ip.user_ns)
        self.recorder = CellRecorder(self.shell, lambda: self.session.tape)
        self.origin = NotebookOrigin(self.shell, self.session)
        self.tape_commands = TapeCommands(self.session, self.recorder)
        self.memory_commands = MemoryCommands(self.session)

    @validate("budget")
    def _valid_budget(self, proposal: Any) -> int:
        if proposal["value"] < 0:
            raise TraitError(f"BubMagics.budget must be 0 (no budget) or a number of tokens, got {proposal['value']}")
        return int(proposal["value"])

    @validate("prices")
    def _valid_prices(self, proposal: Any) -> dict[str, Any]:
        from bub_nb.tape.reports.prices import check_prices

        try:
            return check_prices(proposal["value"], where="BubMagics.prices")
        except BubNbError as exc:  # a TraitError makes %config keep the old value and log this one line
            raise TraitError(_one_line(exc)) from None

    @observe("prices")
    def _prices_changed(self, change: Any) -> None:
        from bub_nb.tape.reports.prices import set_prices

        set_prices(change["new"] or None)  # an empty table goes back to BUB_PRICES

    @validate("otlp_endpoint")
    def _valid_otlp_endpoint(self, proposal: Any) -> str:
        from bub_nb.export.otlp import traces_url

        value = str(proposal["value"]).strip()
        try:
            return traces_url(value) if value else ""
        except BubNbError as exc:
            raise TraitError(_one_line(exc)) from None

    @observe("otlp_endpoint")
    def _otlp_endpoint_changed(self, change: Any) -> None:
        from bub_nb.agent import default_pipeline
        from bub_nb.agent.live_export import switch_live_export

        switch_live_export(default_pipeline(), change["new"] or None)

    @property
    def ip(self) -> InteractiveShell:
        """The shell the magics are registered with."""
        assert self.shell is not None, "BubMagics needs a shell; load it with %load_ext bub_nb"
        return self.shell

    @observe("tape", "home", "store")
    def _tape_changed(self, change: Any) -> None:
        if hasattr(self, "session"):
            self.session.forget_tape()

    # -- %%bub ----------------------------------------------------------------------------------

    @no_var_expand  # only bub_nb's own {name} interpolation applies: "$5" and "{"a": 1}" stay as typed
    @magic_arguments("bub")
    @argument("-m", "--model", help="model for this turn, e.g. offline or openai:gpt-4o-mini")
    @argument("--context", help="view mode: last, full, phases, window:N, notebook or an anchor name")
    @argument("-o", "--output", metavar="VAR", help="store the answer in this variable; a failed turn clears it")
    @argument("--no-stream", action="store_true", help="show the answer only when it is complete")
    @argument("--tools", help="comma-separated tools: builtin names, globs like memory.*, or notebook functions")
    @argument("--budget", type=int, metavar="N", help="refuse the turn if its prompt is estimated over N tokens")
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
            options, text = split_line_prompt(line)
            args = magic_arguments_parse(self.bub_magic, options)
        else:
            args, text = parse_line(self.bub_magic, line), cell
            if args.prompt:
                raise UsageError(f"%%bub takes the prompt from the cell; unexpected words: {' '.join(args.prompt)!r}")
        prompt = interpolate(text, self.ip.user_ns).strip()
        if not prompt:
            raise UsageError("The prompt is empty: write it in the cell under %%bub (or after %bub)")
        if args.output and (not args.output.isidentifier() or keyword.iskeyword(args.output)):
            raise UsageError(f"-o {args.output!r} is not a valid variable name")
        if args.budget is not None and args.budget < 1:
            raise UsageError(f"--budget {args.budget} is not a number of tokens; give one of at least 1")
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
            raise UsageError(_one_line(exc)) from None
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

    @magic_arguments("tape")
    @argument(
        "subcommand",
        help="info | df | search QUERY | reset [--archive] | fork NAME [--from ANCHOR] | "
        "replay -m MODEL [--from ANCHOR] [--into NAME] | "
        "export [md|jsonl] PATH | use NAME|PATH [--new] | record on|off",
    )
    @argument("rest", nargs="*", help="the subcommand's arguments")
    @line_magic("tape")  # type: ignore[arg-type]  # IPython types only the bare form
    @usage_errors
    def tape_magic(self, line: str) -> Any:
        """Inspect and manage the tape: info, df, search, reset, fork, replay, export, use, record."""
        words = split_words(line)
        if not words:
            raise UsageError(f"%tape needs a subcommand: {', '.join(self.tape_commands.NAMES)} (see %tape?)")
        return self.tape_commands.run(words[0], words[1:])
