"""``%tape`` subcommands: each parses its own arguments and calls the tape API."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic_arguments import MagicArgumentParser

from bub_nb.notebook.display import show

if TYPE_CHECKING:
    from bub_nb.notebook.recording import CellRecorder
    from bub_nb.notebook.session import NotebookSession


def _parser(name: str, description: str) -> MagicArgumentParser:
    return MagicArgumentParser(prog=f"%tape {name}", description=description, add_help=False)


def first_view_text(tape: Any) -> str:
    """What the next turn on a (forked) tape will see: where its view starts, what it holds, its memory."""
    view = tape.view()
    anchor = view.anchor
    start = f"⚓ {anchor.name}" if anchor is not None else "the first entry"
    keys = ", ".join(sorted(anchor.state)) if anchor is not None and anchor.state else "no state"
    version = tape.memory.read().version
    memory = f"memory v{version}" if version else "no saved memory"
    return (
        f"Its first view starts at {start} ({keys}) and holds {len(view.messages)} messages "
        f"(≈{view.total_tokens} tokens), with {memory}."
    )


class TapeCommands:
    """The subcommands of ``%tape``; unknown ones and bad arguments are one-line ``UsageError``s."""

    NAMES = ("info", "df", "search", "reset", "fork", "replay", "export", "use", "record")

    def __init__(self, session: NotebookSession, recorder: CellRecorder) -> None:
        self._session = session
        self._recorder = recorder

    def run(self, subcommand: str, words: list[str]) -> Any:
        if subcommand not in self.NAMES:
            raise UsageError(f"Unknown %tape subcommand {subcommand!r}; use one of: {', '.join(self.NAMES)}")
        return getattr(self, f"_{subcommand}")(words)

    def _no_arguments(self, name: str, words: list[str]) -> None:
        if words:
            raise UsageError(f"%tape {name} takes no arguments, got {' '.join(words)!r}")

    def _info(self, words: list[str]) -> Any:
        self._no_arguments("info", words)
        return self._session.tape.info()

    def _df(self, words: list[str]) -> Any:
        self._no_arguments("df", words)
        return self._session.tape.to_frame()

    def _search(self, words: list[str]) -> Any:
        parser = _parser("search", "Entries containing QUERY, newest first.")
        parser.add_argument("query", nargs="+")
        parser.add_argument("--limit", type=int, default=20)
        parser.add_argument("--all", action="store_true", help="every match, however many")
        args = parser.parse_args(words)
        from bub_nb.tape.frames.frame import entries_to_frame

        tape = self._session.tape
        found = tape.search(" ".join(args.query), limit=None if args.all else args.limit)
        if found.cut:
            print(f"The {len(found)} newest matches; more entries match (--limit N, or --all for every one).")
        return entries_to_frame(found, tape)

    def _reset(self, words: list[str]) -> None:
        parser = _parser("reset", "Start the tape over with session/start.")
        parser.add_argument("--archive", action="store_true", help="keep the old tape as <name>.jsonl.<time>.bak")
        args = parser.parse_args(words)
        entries = self._session.tape.reset(archive=args.archive)
        archived = (entries[0].payload.get("state") or {}).get("archived")
        where = f" The old entries are archived at `{archived}`." if archived else " The old entries were discarded."
        show(f"🔄 Tape `{self._session.tape.name}` starts over at ⚓ session/start.{where}")

    def _fork(self, words: list[str]) -> None:
        parser = _parser("fork", "Copy the tape from an anchor on into a new tape and switch to it.")
        parser.add_argument("name")
        parser.add_argument("--from", dest="from_anchor", default=None, help="anchor to fork from (default: all)")
        parser.add_argument("--intention", default=None, help="next steps for the forked session")
        args = parser.parse_args(words)
        parent = self._session.tape
        child = parent.fork_session(args.name, from_anchor=args.from_anchor, intention=args.intention)
        self._session.use(child.name if parent.path is None or child.path is None else str(child.path), create=True)
        show(
            f"🍴 Forked `{parent.name}` into `{child.name}` ({len(child)} entries) and switched to it. "
            f"{first_view_text(child)} `%tape use {parent.name}` goes back."
        )

    def _replay(self, words: list[str]) -> Any:
        parser = _parser("replay", "Send this tape's recorded prompts to another model on a fork; one row per prompt.")
        parser.add_argument("-m", "--model", required=True, help="the model to replay on, e.g. offline")
        parser.add_argument("--from", dest="from_anchor", default=None, help="replay the prompts after this anchor")
        parser.add_argument("--into", default=None, help="the fork's name (default: <tape>__replay__<model>)")
        args = parser.parse_args(words)
        from bub_nb.agent.replay import replay
        from bub_nb.context import parse_mode
        from bub_nb.notebook.session import resolve_tools

        session = self._session
        own, builtins = resolve_tools(session.settings.tools or None, session.namespace())
        frame = replay(
            session.tape,
            model=session.model(args.model),
            from_anchor=args.from_anchor,
            into=args.into,
            context=parse_mode(session.settings.context or "last"),
            tools=own,
            builtin_tools=builtins,
            instructions=session.settings.system_prompt or None,
            max_steps=session.settings.max_steps,
        )
        differs = frame.index[frame["first_difference"]]
        first = f"the answers first differ at row {differs[0]}" if len(differs) else "every answer is the same"
        show(
            f"🔁 Replayed {len(frame)} prompts of `{frame.attrs['source']}` on `{frame.attrs['model']}` into "
            f"`{frame.attrs['fork']}`: {first}. The source tape is unchanged; `%tape use {frame.attrs['fork']}` "
            "opens the fork."
        )
        if frame.attrs.get("stopped"):
            show(f"⚠️ {frame.attrs['stopped']}")
        return frame

    def _export(self, words: list[str]) -> None:
        parser = _parser("export", "Write the tape as a Markdown transcript per phase, or as JSON Lines.")
        parser.add_argument("parts", nargs="+", metavar="[md|jsonl] PATH")
        args = parser.parse_args(words)
        parts = list(args.parts)
        fmt = parts.pop(0) if parts[0] in ("md", "markdown", "jsonl") and len(parts) > 1 else None
        if len(parts) != 1:
            raise UsageError(f"%tape export takes [md|jsonl] PATH, got {' '.join(args.parts)!r}")
        path = Path(parts[0]).expanduser()
        fmt = fmt or ("jsonl" if path.suffix == ".jsonl" else "md")
        tape = self._session.tape
        try:
            if fmt == "jsonl":
                from bub_nb.tape.reports.transcript import write_jsonl

                count = write_jsonl(tape, path)
            else:
                from bub_nb.tape.reports.transcript import transcript_markdown

                path.write_text(transcript_markdown(tape), encoding="utf-8")
                count = len(tape)
        except OSError as exc:
            raise UsageError(f"Cannot write the export to {str(path)!r}: {exc.strerror or exc}") from None
        show(f"📤 Exported {count} entries of `{tape.name}` to `{path}` ({fmt}).")

    def _use(self, words: list[str]) -> None:
        create = "--new" in words
        words = [word for word in words if word != "--new"]
        if len(words) != 1:
            raise UsageError(f"%tape use takes one tape NAME or PATH (--new to start one), got {' '.join(words)!r}")
        tape = self._session.use(words[0], create=create)
        fresh = " (a new tape: it is written on the first turn)" if not len(tape) else ""
        show(f"📼 Now on tape `{tape.name}` ({len(tape)} entries) at `{tape.location}`{fresh}.")

    def _record(self, words: list[str]) -> None:
        if words not in (["on"], ["off"]):
            raise UsageError(f"%tape record takes on or off, got {' '.join(words)!r}")
        recorder = self._recorder
        if words == ["on"]:
            recorder.start()
            message = "⏺ Recording executed cells as `notebook.cell` events (try `--context notebook`)."
        else:
            recorder.stop()
            message = "⏹ Stopped recording cells."
        show(message)
