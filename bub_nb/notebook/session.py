"""The notebook's side of bub_nb: which tape the magics work on, and the agent for each turn."""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from bub_nb.agent import Agent
from bub_nb.agent.builtin_tools import builtin_registry
from bub_nb.agent.hookspecs import Envelope, StreamEvent
from bub_nb.agent.models import Model, resolve_model
from bub_nb.agent.registry import default_pipeline
from bub_nb.agent.state import TurnState, turn_state
from bub_nb.agent.tools import Tool, tool
from bub_nb.agent.turn import Turn
from bub_nb.context import parse_mode
from bub_nb.errors import BubNbError, ModelConfigError, TapeError, ToolError
from bub_nb.tape import Tape, current_notebook, open_tape
from bub_nb.tape.renamed import left_behind
from bub_nb.tape.stores.archive import is_archive_name
from bub_nb.tape.stores.lineage import store_lineage


def resolve_tools(
    spec: str | Iterable[str] | None, namespace: Mapping[str, Any]
) -> tuple[list[Tool], bool | list[str]]:
    """``--tools a,b``: builtin names or globs (``memory.*``), or functions/tools from the notebook.

    Returns the user's tools and the builtin selection (``True`` for all builtins when no spec).
    """
    if spec is None:
        return [], True
    names = [n.strip() for n in (spec.split(",") if isinstance(spec, str) else spec) if n.strip()]
    if names in (["none"], []):
        return [], False
    builtins = builtin_registry()
    chosen_builtins: list[str] = []
    own: list[Tool] = []
    for name in names:
        if name in builtins or "*" in name:
            builtins.select([name])  # raises naming the known tools when a glob matches nothing
            chosen_builtins.append(name)
            continue
        value = namespace.get(name)
        if isinstance(value, Tool):
            own.append(value)
        elif callable(value):
            own.append(tool(value))
        else:
            known = ", ".join([*builtins.names, *(k for k, v in namespace.items() if isinstance(v, Tool))])
            raise ToolError(f"Tool {name!r} is neither a builtin tool nor a function in the notebook; known: {known}")
    return own, chosen_builtins or False


def _no_model(spec: str, variables: list[str]) -> str:
    known = ", ".join([*variables, "offline"])
    return f"No notebook variable or known model is named {spec!r} (models: {known})"


def lesson_forks(tape: Tape) -> list[str]:
    """The tapes forked from ``tape``, and from those, as its store's lineage records them."""
    children: dict[str, list[str]] = {}
    for record in store_lineage(tape.base_store):
        children.setdefault(str(record.get("parent")), []).append(str(record.get("child")))
    found: list[str] = []
    waiting = [tape.name]
    while waiting:
        for child in children.get(waiting.pop(), []):
            if child not in found and child != tape.name:
                found.append(child)
                waiting.append(child)
    return found


class NotebookSession:
    """State the magics share: the current tape, and how turns are run."""

    def __init__(self, settings: Any, namespace: Callable[[], Mapping[str, Any]]) -> None:
        self._settings = settings
        self._namespace = namespace
        self._tape: Tape | None = None
        self.last_turn: Turn | None = None
        self.last_agent: Agent | None = None
        self._checked_for_rename: set[str] = set()

    @property
    def settings(self) -> Any:
        """The magics' configuration (``BubMagics`` traits)."""
        return self._settings

    def namespace(self) -> Mapping[str, Any]:
        """The notebook's variables."""
        return self._namespace()

    @property
    def tape(self) -> Tape:
        if self._tape is None:
            self._tape = self.open(self._settings.tape or None)
        return self._tape

    def open(self, name_or_path: str | None, *, create: bool = True) -> Tape:
        home = self._settings.home or None
        if name_or_path and is_archive_name(name_or_path):
            return open_tape(name_or_path, home=home)
        if name_or_path and (name_or_path.endswith(".jsonl") or os.sep in name_or_path):
            return open_tape(Path(name_or_path).expanduser(), create=create)
        store = getattr(self._settings, "store", "") or None
        if store is not None:
            return open_tape(name_or_path, store=store, create=create)
        return open_tape(name_or_path, home=home, create=create)

    def use(self, name_or_path: str, *, create: bool = False) -> Tape:
        """Switch to another tape; the current one stays if the new one cannot be opened.

        A tape that does not exist is refused unless ``create`` (``%tape use NAME --new``).
        """
        tape = self.open(name_or_path, create=create)
        tape.stats()  # reads (or creates nothing); a tape that cannot be read fails here, before the switch
        self._tape = tape
        return tape

    def renamed_notice(self) -> str | None:
        """What to say, once per tape, when this notebook's own tape is still empty and its folder holds the tape
        of a notebook whose file is gone: most likely this notebook before it was renamed."""
        notebook = current_notebook()
        tape = self.tape
        if notebook.source == "cwd" or tape.name != notebook.tape_name or tape.name in self._checked_for_rename:
            return None
        self._checked_for_rename.add(tape.name)
        if tape.stats().entries:
            return None
        found = left_behind(tape.base_store, notebook)
        if not found:
            return None
        old, others = found[0], len(found) - 1
        more = f" ({others} more tape{'s' if others > 1 else ''} of gone notebooks in this folder)" if others else ""
        return (
            f"Note: this notebook starts a new, empty tape `{tape.name}`, because a notebook's tape is named after "
            f"its file. `{Path(old.notebook).name}` in this folder is gone, renamed perhaps, and its tape "
            f"`{old.tape}` holds {old.entries} entries{more}. `%tape use {old.tape}` continues that tape instead."
        )

    def start_lesson(self, name: str) -> Tape:
        """Switch to the tape ``name``, emptied: its entries so far, and the tapes forked from it, are archived.

        The tape is then as a new one and the names its forks took are free again, so a lesson run from the
        top again shows what it showed the first time.
        """
        tape = self.open(name, create=True)
        if tape.read_only:
            raise TapeError(f"Tape {name!r} is an archive, which is read-only; a lesson needs a tape of its own")
        store = tape.base_store
        for forked in [*lesson_forks(tape), tape.name]:
            if store.exists(forked):
                store.reset(forked, archive=True)
        self._tape = tape
        return tape

    def forget_tape(self) -> None:
        """Re-resolve the tape on next use (after ``tape`` or ``home`` changed)."""
        self._tape = None

    def chat_id(self) -> str:
        return current_notebook().session_id

    def model(self, spec: str | None) -> Model:
        """A model by spec (``offline``, ``openai:<model>``), or a model object named in the notebook.

        A bare name that is no notebook variable holding a model is most often a typo or a variable a
        restart lost: a name near a model variable is refused naming it, and one that cannot reach an
        endpoint is refused naming the notebook's models, instead of asking for an API key.
        """
        spec = spec or self._settings.model or None
        if not spec or not spec.isidentifier() or spec == "offline":
            return resolve_model(spec)
        namespace = self._namespace()
        named = namespace.get(spec)
        if isinstance(named, Model):
            return named
        variables = sorted(
            k
            for k, v in namespace.items()
            if isinstance(v, Model) and not isinstance(v, type) and not k.startswith("_")
        )
        near = difflib.get_close_matches(spec, variables, n=3, cutoff=0.6)
        if near:
            raise ModelConfigError(f"{_no_model(spec, variables)}; did you mean {', '.join(near)}?")
        try:
            # resolve_model keeps one model per model, endpoint, key fingerprint and options, so a changed
            # BUB_API_BASE / OPENAI_BASE_URL or key reaches the next turn while the client is still reused.
            return resolve_model(spec)
        except ModelConfigError as exc:
            raise ModelConfigError(f"{_no_model(spec, variables)}; as an endpoint's model: {exc}") from None

    def agent(
        self,
        *,
        model: str | None = None,
        context: str | None = None,
        tools: str | None = None,
        cell: int | None = None,
        budget: int | None = None,
    ) -> Agent:
        own, builtins = resolve_tools(tools or (self._settings.tools or None), self._namespace())
        return Agent(
            self.tape,
            model=self.model(model),
            tools=own,
            max_steps=self._settings.max_steps,
            context=parse_mode(context or self._settings.context or "last"),
            instructions=self._settings.system_prompt or None,
            builtin_tools=builtins,
            pipeline=default_pipeline(),
            meta={"cell": cell, "source": "notebook"} if cell is not None else {"source": "notebook"},
            budget=budget if budget is not None else getattr(self._settings, "budget", 0) or None,
        )

    def run_turn(self, agent: Agent, prompt: str, *, on_delta: Callable[[str], None] | None) -> Turn:
        """One turn through the pipeline, as a ``notebook`` inbound envelope."""
        self.last_agent = agent
        envelope = Envelope(
            "notebook",
            self.chat_id(),
            prompt,
            meta=TurnState(tape=agent.tape, agent=agent, instructions=agent.instructions),
        )

        def on_event(event: StreamEvent) -> None:
            if event.kind == "text" and on_delta is not None:
                on_delta(str(event.data.get("delta", "")))

        result = default_pipeline().process_inbound_sync(envelope, on_event=on_event if on_delta else None)
        turn = turn_state(result.state).get("turn") or agent.last_turn
        if turn is None:
            raise BubNbError(f"The turn on tape {agent.tape.name!r} produced no result")
        self.last_turn = turn
        return turn
