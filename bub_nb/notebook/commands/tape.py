"""``%tape`` subcommands: what each does, registered in the magic's registry (:class:`.registry.Subcommands`),
which parsing, dispatch, the errors and ``%tape?`` read."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from bub_nb.notebook.commands.registry import Subcommands, arg
from bub_nb.notebook.display import first_view_text, show
from bub_nb.tape.corrections.unreached import record_export
from bub_nb.tape.forks import INTENTION_ANCHOR
from bub_nb.tape.locations import readable_tape_name

if TYPE_CHECKING:
    from bub_nb.notebook.session import NotebookSession
    from bub_nb.tape import Tape

__all__ = ["SUBCOMMANDS", "TAPE", "TapeCommands"]

#: The subcommands that act on one tape: the holder's once the notebook has agents, or ``--agent NAME``'s.
ON_THE_HOLDERS_TAPE = ("info", "df", "search", "reset", "retract", "unretract")

TAPE = Subcommands(
    "tape",
    "Inspect and manage the tape. Once the notebook has agents, "
    + ", ".join(ON_THE_HOLDERS_TAPE)
    + " act on the tape of the agent holding the conversation, or on agent NAME's with --agent NAME.",
    options="[--agent NAME]",
)
#: Every ``%tape`` subcommand, in the order ``%tape?`` lists them.
SUBCOMMANDS = TAPE.commands
subcommand = TAPE.add  # the decorator each handler below registers with


class TapeCommands:
    """Runs ``%tape`` lines on the session's tape; unknown subcommands and bad arguments are one-line
    ``UsageError``s. ``record`` switches cell recording (``BubMagics.record``)."""

    def __init__(self, session: NotebookSession, record: Callable[[bool], None]) -> None:
        self.session = session
        self.record = record
        self._agent: str | None = None

    @property
    def target(self) -> Tape:
        """The tape a subcommand acts on: ``--agent NAME``'s, else the holder's, else the notebook's."""
        return self.session.holders_tape(self._agent)

    def run(self, words: list[str]) -> Any:
        command, rest = TAPE.choose(words)
        rest, agent = agent_option(rest)
        if agent is not None and command.name not in ON_THE_HOLDERS_TAPE:
            raise UsageError(
                f"--agent goes with {', '.join(ON_THE_HOLDERS_TAPE)}; %tape {command.name} acts on the notebook's tape"
            )
        if command.name in ("retract", "unretract"):
            check_spans(command.name, rest)
        self._agent = agent
        try:
            return command.handler(self, TAPE.parse(command, rest))
        finally:
            self._agent = None


@subcommand("info", "The tape's name, location, size, entries and last anchor.")
def _info(commands: TapeCommands, args: argparse.Namespace) -> Any:
    return commands.target.info()


@subcommand("df", "The tape as a DataFrame, one row per entry (see df.tape for phases, usage and search).")
def _df(commands: TapeCommands, args: argparse.Namespace) -> Any:
    return commands.target.to_frame()


@subcommand(
    "search",
    "Entries containing QUERY, newest first.",
    arg("query", nargs="+", metavar="QUERY", help="the words to look for"),
    arg("--limit", type=int, default=20, metavar="N", help="at most this many entries (default 20)"),
    arg("--all", action="store_true", help="every match, however many"),
)
def _search(commands: TapeCommands, args: argparse.Namespace) -> Any:
    from bub_nb.tape.frames.frame import entries_to_frame

    tape = commands.target
    found = tape.search(" ".join(args.query), limit=None if args.all else args.limit)
    if found.cut:
        print(f"The {len(found)} newest matches; more entries match (--limit N, or --all for every one).")
    return entries_to_frame(found, tape)


@subcommand(
    "reset",
    "Start the tape over with session/start.",
    arg("--archive", action="store_true", help="keep the old tape as <name>.jsonl.<time>.bak"),
)
def _reset(commands: TapeCommands, args: argparse.Namespace) -> None:
    tape = commands.target
    had = tape.stats().entries
    entries = tape.reset(archive=args.archive)
    archived = (entries[0].payload.get("state") or {}).get("archived")
    if archived:
        where = f" The old entries are archived at `{archived}`."
    elif not had:
        where = " The tape held no entries, so there was nothing to archive." if args.archive else ""
    else:
        where = " The old entries were discarded."
    show(f"Tape `{readable_tape_name(tape)}` starts over at anchor session/start.{where}")


@subcommand(
    "fork",
    "Copy the tape from an anchor on into a new tape and switch to it.",
    arg("name", metavar="NAME", help="the new tape's name"),
    arg("--from", dest="from_anchor", default=None, metavar="ANCHOR", help="anchor to fork from (default: all)"),
    arg("--intention", default=None, metavar="TEXT", help="next steps for the forked session"),
)
def _fork(commands: TapeCommands, args: argparse.Namespace) -> None:
    session = commands.session
    parent = session.tape
    child = parent.fork_session(args.name, from_anchor=args.from_anchor, intention=args.intention)
    session.use(child.name if parent.path is None or child.path is None else str(child.path), create=True)
    state = child.find_anchor(INTENTION_ANCHOR).state or {} if args.from_anchor and args.intention else {}
    note = f" Carried in the intention's state, not copied: {state['unanswered']}." if "unanswered" in state else ""
    show(
        f"Forked `{parent.name}` into `{child.name}` ({len(child)} entries) and switched to it. "
        f"{first_view_text(child)}{note} `%tape use {parent.name}` goes back."
    )


@subcommand(
    "replay",
    "Send this tape's recorded prompts to another model on a fork; one row per prompt. "
    "Tools, view mode, instructions and max_steps are those %%bub uses.",
    arg("-m", "--model", required=True, help="the model to replay on, e.g. offline"),
    arg("--from", dest="from_anchor", default=None, metavar="ANCHOR", help="replay the prompts after this anchor"),
    arg("--into", default=None, metavar="NAME", help="the fork's name (default: <tape>__replay__<model>)"),
)
def _replay(commands: TapeCommands, args: argparse.Namespace) -> Any:
    from bub_nb.agent.replay import replay

    session = commands.session
    options = session.agent_options(model=args.model)
    frame = replay(
        session.tape,
        model=options.model,
        from_anchor=args.from_anchor,
        into=args.into,
        context=options.context,
        tools=list(options.tools),
        builtin_tools=options.builtin_tools,
        instructions=options.instructions,
        max_steps=options.max_steps,
    )
    differs = frame.index[frame["first_difference"]]
    first = f"the answers first differ at row {differs[0]}" if len(differs) else "every answer is the same"
    show(
        f"Replayed {len(frame)} prompts of `{frame.attrs['source']}` on `{frame.attrs['model']}` into "
        f"`{frame.attrs['fork']}`: {first}. The source tape is unchanged; `%tape use {frame.attrs['fork']}` "
        "opens the fork."
    )
    if frame.attrs.get("stopped"):
        show(f"Warning: {frame.attrs['stopped']}")
    return frame


_FORMATS = {"md": "md", "markdown": "md", "jsonl": "jsonl"}


@subcommand(
    "export",
    "Write the tape as a Markdown transcript per phase (with agents: their story across their tapes, in order), "
    "or as JSON Lines (the format follows a .jsonl PATH).",
    arg("parts", nargs="+", metavar="[md|jsonl] PATH", help="the format, then the file to write"),
)
def _export(commands: TapeCommands, args: argparse.Namespace) -> None:
    parts = list(args.parts)
    fmt = _FORMATS.get(parts[0]) if len(parts) > 1 else None
    if fmt is not None:
        parts.pop(0)
    if len(parts) != 1:
        raise UsageError(f"%tape export takes [md|jsonl] PATH, got {' '.join(args.parts)!r}")
    if parts[0] in _FORMATS:
        word = parts[0]
        raise UsageError(f"%tape export {word} needs the PATH to write, e.g. %tape export {word} tape.{_FORMATS[word]}")
    path = Path(parts[0]).expanduser()
    fmt = fmt or ("jsonl" if path.suffix == ".jsonl" else "md")
    tape = commands.session.tape
    written = [] if fmt == "jsonl" else [tape]  # write_jsonl records its own export
    try:
        if fmt == "jsonl":
            from bub_nb.tape.reports.transcript import write_jsonl

            count = write_jsonl(tape, path)
        elif commands.session.has_agents():  # several agents: one story across their tapes, in order
            from bub_nb.tape.open import notebook_tapes
            from bub_nb.tape.reports.story import story_markdown

            tapes = notebook_tapes(tape)
            path.write_text(story_markdown(tapes), encoding="utf-8")
            count, written = sum(len(each) for each in tapes.values()), list(tapes.values())
        else:
            from bub_nb.tape.reports.transcript import transcript_markdown

            path.write_text(transcript_markdown(tape), encoding="utf-8")
            count = len(tape)
    except OSError as exc:
        raise UsageError(f"Cannot write the export to {str(path)!r}: {exc.strerror or exc}") from None
    record_export(written, path, fmt)  # so a redaction can name the file
    show(f"Exported {count} entries of `{readable_tape_name(tape)}` to `{path}` ({fmt}).")


@subcommand(
    "use",
    "Switch to another tape by name or path; the current one stays if it cannot be opened.",
    arg("target", metavar="NAME|PATH", help="a tape name, a .jsonl path or an archive"),
    arg("--new", action="store_true", help="start the tape if it does not exist"),
)
def _use(commands: TapeCommands, args: argparse.Namespace) -> None:
    tape = commands.session.use(args.target, create=args.new)
    fresh = " (a new tape: it is written on the first turn)" if not len(tape) else ""
    show(f"Now on tape `{readable_tape_name(tape)}` ({len(tape)} entries) at `{tape.location}`{fresh}.")


@subcommand(
    "record",
    "Record executed code cells as notebook.cell events (see --context notebook), or stop.",
    arg("switch", choices=("on", "off"), help="on or off"),
)
def _record(commands: TapeCommands, args: argparse.Namespace) -> None:
    commands.record(args.switch == "on")
    if args.switch == "on":
        show("Recording executed cells as `notebook.cell` events (try `--context notebook`).")
    else:
        show("Stopped recording cells.")


_SPAN_HELP = "an entry id (7) or an inclusive range of ids (5-9)"


@subcommand(
    "retract",
    "Take entries out of every later view; they stay on the tape, and a call goes with its results.",
    arg("entries", metavar="ID|A-B", help=_SPAN_HELP),
    arg("--reason", default=None, metavar="TEXT", help="why they are taken back"),
)
def _retract(commands: TapeCommands, args: argparse.Namespace) -> None:
    tape = commands.target
    event = tape.retract(args.entries, reason=args.reason)
    turned = any(entry.name == "run" for entry in tape.iter_reverse(kinds=("event",)))
    look = (
        "`%context --diff turn:-1 last` shows the tokens freed" if turned else "`%context` shows the view without them"
    )
    show(
        f"Retracted {_spans(event)} on tape `{readable_tape_name(tape)}` (event #{event.id}): later views leave them "
        "out, past turns keep what they sent. "
        f"{look}; `%tape unretract {args.entries}` brings them back."
    )


@subcommand(
    "unretract",
    "Bring retracted entries back into later views.",
    arg("entries", metavar="ID|A-B", help=_SPAN_HELP),
    arg("--reason", default=None, metavar="TEXT", help="why they come back"),
)
def _unretract(commands: TapeCommands, args: argparse.Namespace) -> None:
    tape = commands.target
    event = tape.unretract(args.entries, reason=args.reason)
    show(
        f"Brought back {_spans(event)} on tape `{readable_tape_name(tape)}` (event #{event.id}): later views include "
        "them again."
    )


def _spans(event: Any) -> str:
    return ", ".join(f"#{a}" if a == b else f"#{a}–#{b}" for a, b in event.payload["data"]["ids"])


@subcommand(
    "attach",
    "Write the notebook's tape into one file beside the notebook, NOTEBOOK.tape.jsonl, to share it with the "
    "notebook (git, a shared folder); with --import, take that file up as this notebook's tape in a Bub home "
    "that lacks it.",
    arg("--import", dest="take_up", action="store_true", help="continue from the attached file beside the notebook"),
)
def _attach(commands: TapeCommands, args: argparse.Namespace) -> None:
    from bub_nb.errors import BubNbError
    from bub_nb.tape.attach import attach, import_attached
    from bub_nb.tape.locations import current_notebook

    where = current_notebook()
    if where.source == "cwd":
        raise UsageError(
            "%tape attach needs to know the notebook this kernel runs, and cannot tell it; "
            "`bub-nb tapes attach NOTEBOOK` attaches a notebook's tape from a shell"
        )
    notebook = where.workspace / where.session_id
    session = commands.session
    home = session.settings.home or None
    try:
        if args.take_up:
            if session.identity is not None and session.identity.took_up_attached():
                show(session.identity.note() or f"`{notebook.name}`'s attached tape is this notebook's tape already.")
                return
            done = import_attached(notebook, home=home)
            tape = session.use(done.tape, create=True)
            show(
                f"Continued from `{notebook.name}`'s attached tape: {done.entries} entries, now on tape "
                f"`{readable_tape_name(tape)}`."
            )
            return
        done = attach(session.tape, notebook, home=home)
    except BubNbError as error:
        raise UsageError(str(error)) from None
    show(
        f"Attached {done.entries} entries of `{readable_tape_name(session.tape)}` to `{done.path.name}` beside the "
        "notebook; commit it with the notebook, and `%tape attach --import` continues from it elsewhere."
    )


@subcommand(
    "continue",
    "Write tape NAME from now on, in every kernel of this notebook (after a rename, move or clone), or --own to "
    "keep the notebook's own tape; the choice is kept under the Bub home.",
    arg("target", nargs="?", default=None, metavar="NAME", help="a tape of this home"),
    arg("--own", action="store_true", help="keep the notebook's own tape, named after its file"),
)
def _continue(commands: TapeCommands, args: argparse.Namespace) -> None:
    from bub_nb.notebook.identity import KEEP_OWN, continue_tape

    if (args.target is None) == (not args.own):
        raise UsageError("%tape continue takes one of: a tape's NAME, or --own")
    tape, kept = continue_tape(commands.session, args.target or KEEP_OWN)
    show(
        f"This notebook writes tape `{readable_tape_name(tape)}` ({len(tape)} entries) from now on, in every kernel; "
        f"the choice is kept in `{kept}`."
    )


def agent_option(words: list[str]) -> tuple[list[str], str | None]:
    """The subcommand's words without ``--agent NAME``, and that name."""
    rest, agent = [], None
    words = list(words)
    while words:
        word = words.pop(0)
        if word == "--agent" or word.startswith("--agent="):
            value = word.partition("=")[2] or (words.pop(0) if words else "")
            if not value:
                raise UsageError("--agent needs the NAME of one of the notebook's agents")
            agent = value
        else:
            rest.append(word)
    return rest, agent


def check_spans(name: str, words: list[str]) -> None:
    """A span that starts with ``-`` would pass for an option; say what an entry id is instead."""
    for word in words:
        if word[:1] == "-" and word[1:2].isdigit():
            raise UsageError(
                f"%tape {name} takes an entry id (7) or an inclusive range of ids (5-9), ids counting from 1; "
                f"got {word!r}"
            )
