"""The notebook's side of bub_nb: which tape the magics work on, the model ``-m NAME`` means, and the agent for
each turn."""

from __future__ import annotations

import difflib
import fnmatch
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from bub_nb.agent import Agent
from bub_nb.agent.kernel_tools import RUNNING, Kernel, Limits, kernel_tools
from bub_nb.agent.mcp.servers import Ask
from bub_nb.agent.models import Model, resolve_model
from bub_nb.agent.phase_handoff import PhaseHandoff
from bub_nb.agent.registry import default_pipeline
from bub_nb.agent.team import Team
from bub_nb.agent.tools import Tool, tool
from bub_nb.agent.tools.builtin import builtin_registry
from bub_nb.agent.turn import Turn
from bub_nb.context import parse_mode
from bub_nb.errors import ModelConfigError, ToolError
from bub_nb.notebook.agents import NotebookAgents
from bub_nb.notebook.mcp import NotebookMcp
from bub_nb.tape import Tape, current_notebook, open_tape
from bub_nb.tape.names import MAIN_AGENT, owner_qualified
from bub_nb.tape.stores.archive import is_archive_name

if TYPE_CHECKING:
    from bub_nb.context.view import Mode
    from bub_nb.notebook.settings import Settings
    from bub_nb.tape.locations import NotebookLocation


def resolve_tools(
    spec: str | Iterable[str] | None,
    namespace: Mapping[str, Any],
    kernel: Iterable[Tool] = (),
    *,
    allow_code: bool = False,
) -> tuple[list[Tool], bool | list[str]]:
    """``--tools a,b``: builtin names or globs (``memory.*``), kernel tools, or functions/tools from the notebook.

    Returns the user's tools (with the chosen kernel tools) and the builtin selection (``True`` for all
    builtins when no spec). Without a spec the kernel tools that look are offered, and ``python.run``
    too when ``allow_code``; a glob such as ``*`` never offers ``python.run`` unless code is allowed:
    only naming it does.
    """
    kernel = list(kernel)
    offered = [item for item in kernel if item.name != RUNNING or allow_code]
    if spec is None:
        return offered, True
    names = [n.strip() for n in (spec.split(",") if isinstance(spec, str) else spec) if n.strip()]
    if names in (["none"], []):
        return [], False
    builtins = builtin_registry()
    chosen_builtins: list[str] = []
    own: dict[str, Tool] = {}
    for name in names:
        glob = "*" in name or "?" in name
        from_builtins = [item for item in builtins if _matches(item, name)]
        from_kernel = [item for item in (offered if glob else kernel) if _matches(item, name)]
        if from_builtins or from_kernel:
            chosen_builtins += [name] if from_builtins else []
            own.update((item.name, item) for item in from_kernel)
            continue
        value = namespace.get(name)
        if isinstance(value, Tool):
            own[value.name] = value
        elif callable(value) and not glob:
            made = tool(value)
            own[made.name] = made
        else:
            theirs = [key for key, value in namespace.items() if isinstance(value, Tool)]
            known = ", ".join([*builtins.names, *(item.name for item in kernel), *theirs])
            what = "matches no tool" if glob else "is neither a builtin tool nor a function in the notebook"
            raise ToolError(f"Tool {name!r} {what}; known: {known}")
    return list(own.values()), chosen_builtins or False


def _matches(item: Tool, pattern: str) -> bool:
    return fnmatch.fnmatchcase(item.name, pattern) or fnmatch.fnmatchcase(item.model_name, pattern)


class DecidesIdentity(Protocol):
    """Which tape the notebook writes after its file was renamed, moved, duplicated or cloned
    (``bub_nb.notebook.identity.NotebookIdentity``)."""

    def settle(self, notebook: NotebookLocation) -> None: ...

    def kept(self, own: str, target: str | None) -> None: ...

    def note(self) -> str | None: ...

    def took_up_attached(self) -> bool: ...


@dataclass(frozen=True)
class AgentOptions:
    """How a notebook turn runs, from a cell's options over the magics' settings: ``%%bub``, the comma
    commands, ``%handoff --summarize`` and ``%tape replay`` all take them from here."""

    model: Model
    tools: tuple[Tool, ...]
    builtin_tools: bool | list[str]
    max_steps: int
    context: Mode
    instructions: str | None
    budget: int | None
    result_budget: int | None
    handoff_at: float | None = None
    embedding_model: str = ""

    def keywords(self) -> dict[str, Any]:
        """The options as ``Agent`` takes them: every field is one of its keyword arguments, by the same name."""
        values = {field.name: getattr(self, field.name) for field in fields(self)}
        return {**values, "tools": list(self.tools)}


class NotebookSession:
    """State the magics share: the current tape, and how turns are run."""

    def __init__(
        self,
        settings: Settings,
        namespace: Callable[[], Mapping[str, Any]],
        kernel: Kernel | None = None,
        ask_mcp: Ask | None = None,
    ) -> None:
        self._settings = settings
        self._namespace = namespace
        self._kernel = kernel
        self._tape: Tape | None = None
        self._team: Team | None = None
        self._team_tape: Tape | None = None
        self._unsettled = False  # the tape was the kernel's own while it could not tell its notebook
        self._run_tapes: dict[str, Tape] = {}
        self.last_turn: Turn | None = None
        self.last_agent: Agent | None = None
        self.agents = NotebookAgents()
        self.mcp = NotebookMcp(settings, ask_mcp)
        self.identity: DecidesIdentity | None = None
        """Decides, from the saved notebook, which tape a renamed, moved, duplicated or cloned notebook writes."""

    @property
    def settings(self) -> Settings:
        """The magics' configuration (``BubMagics`` traits)."""
        return self._settings

    def namespace(self) -> Mapping[str, Any]:
        """The notebook's variables."""
        return self._namespace()

    @property
    def tape(self) -> Tape:
        """The notebook's tape: the setting's, else the running notebook's. While a kernel cannot tell its notebook
        it is the kernel's own, until a later cell tells it, if nothing was written there yet; while ``%run`` runs
        another notebook, that notebook's."""
        if self._settings.tape:
            if self._tape is None:
                self._tape, self._team = self.open(self._settings.tape), None
            return self._tape
        notebook = current_notebook()
        if notebook.source == "run":
            return self._run_tape(notebook.tape_name)
        tape = self._tape
        if (
            tape is not None
            and self._unsettled
            and tape.name != notebook.tape_name
            and not tape.store.exists(tape.name)
        ):
            self._tape = None  # the cells now tell the notebook, and the kernel's own tape is still unwritten
        if self._tape is None:
            self._tape, self._team = self.open(None), None
            self._unsettled = not notebook.settled
            if self.identity is not None:
                self.identity.settle(notebook)  # may switch to the tape the saved notebook's outputs name
        return self._tape

    def _run_tape(self, name: str) -> Tape:
        tape = self._run_tapes.get(name)
        if tape is None:
            tape = self._run_tapes[name] = self.open(None)
        return tape

    def open(self, name_or_path: str | None, *, create: bool = True) -> Tape:
        home = self._settings.home or None
        store = self._settings.store or None
        if name_or_path and is_archive_name(name_or_path):
            return open_tape(name_or_path, home=home)
        if name_or_path and owner_qualified(name_or_path) and (store or os.environ.get("BUB_STORE")):
            return open_tape(name_or_path, store=store, create=create)  # another role's tape: owner/name
        if name_or_path and (name_or_path.endswith(".jsonl") or os.sep in name_or_path):
            return open_tape(Path(name_or_path).expanduser(), create=create)
        if store is not None:
            return open_tape(name_or_path, store=store, create=create)
        return open_tape(name_or_path, home=home, create=create)

    def use(self, name_or_path: str, *, create: bool = False) -> Tape:
        """Switch to another tape; the current one stays if the new one cannot be opened.

        A tape that does not exist is refused unless ``create`` (``%tape use NAME --new``).
        """
        tape = self.open(name_or_path, create=create)
        tape.stats()  # reads (or creates nothing); a tape that cannot be read fails here, before the switch
        self._tape, self._team, self._unsettled = tape, None, False
        return tape

    def forget_tape(self) -> None:
        """Re-resolve the tape on next use (after ``tape`` or ``home`` changed)."""
        self._tape = self._team = None
        self._run_tapes.clear()

    def has_agents(self) -> bool:
        """Whether the notebook has named agents: defined in this kernel, recorded on its tapes before, or named by
        a handoff another kernel wrote since (bringing who holds the conversation up to date finds those)."""
        if self.agents:
            return True
        team = self.team()
        return team.holder() is not None or len(team.names) > 1

    def model(self, spec: str | None) -> Model:
        """A model by spec (``offline``, ``openai:<model>``), or a model object named in the notebook
        (:func:`notebook_model`)."""
        return notebook_model(spec or self._settings.model or None, self._namespace())

    def chat_id(self) -> str:
        return current_notebook().session_id

    def agent_options(
        self,
        *,
        model: str | None = None,
        context: str | None = None,
        tools: str | None = None,
        budget: int | None = None,
        instructions: str | None = None,
    ) -> AgentOptions:
        """A cell's (or a named agent's) options over the settings; ``budget=0`` turns a configured budget off for
        that cell, and ``instructions`` are added to ``system_prompt``."""
        settings = self._settings
        spec = tools or (settings.tools or None)
        mcp = self.mcp.tools(spec)
        own, builtins = resolve_tools(
            spec, self._namespace(), [*self.kernel_tools(), *mcp], allow_code=bool(settings.allow_code)
        )
        budget = settings.budget if budget is None else budget
        return AgentOptions(
            model=self.model(model),
            tools=tuple(own),
            builtin_tools=builtins,
            max_steps=settings.max_steps,
            context=parse_mode(context or settings.context or "last"),
            instructions=_joined(settings.system_prompt, instructions),
            budget=budget or None,
            result_budget=settings.tool_budget or None,
            handoff_at=getattr(settings, "handoff_at", 0.0) or None,
            embedding_model=getattr(settings, "embedding_model", "") or "",
        )

    def agent(
        self,
        *,
        model: str | None = None,
        context: str | None = None,
        tools: str | None = None,
        cell: int | None = None,
        budget: int | None = None,
        name: str | None = None,
    ) -> Agent:
        """An agent on the current tape with :meth:`agent_options`, run as a notebook's turn (through the
        plugin pipeline, its events marked with the cell).

        Once agents are defined (``%agent``), ``name`` picks one (default: the one holding the conversation,
        else ``main``); one that handed the conversation away is refused here, before anything is written.
        """
        team = self.team() if name is not None or self.has_agents() else None
        if team is not None:
            name = name or team.holder() or MAIN_AGENT
            team.check_may_run(name)
            self.agents.load(team)  # an agent another kernel defined since: with its recorded settings
        own = self.agents.get(name) if name else None
        if own is not None:
            model, context, tools = model or own.model, context or own.context, tools or own.tools
        options = self.agent_options(
            model=model,
            context=context,
            tools=tools,
            budget=budget,
            instructions=own.instructions if own is not None else None,
        )
        agent = Agent(
            self.tape,
            name=None if name in (None, MAIN_AGENT) else name,
            pipeline=default_pipeline(),
            meta={"cell": cell, "source": "notebook"} if cell is not None else {"source": "notebook"},
            **options.keywords(),
        )
        if team is not None:
            team.add(agent)
        return agent

    def phase_handoff(
        self, *, model: str | None = None, cell: int | None = None, agent: str | None = None
    ) -> PhaseHandoff:
        """What ``%handoff NAME --summarize`` or ``--preview`` needs of agent ``agent`` (default: the one a plain
        ``%%bub`` runs as): its tape, its model (``model`` first), its view, and a notebook's meta. No tools or
        servers: a summary uses none."""
        name = agent
        if name is not None or self.has_agents():
            team = self.team()
            name = name or team.holder() or MAIN_AGENT
            self.agents.load(team)  # an agent another kernel defined since: with its recorded settings
        own = self.agents.get(name) if name else None
        tape = self.holders_tape(name)
        context = parse_mode((own.context if own is not None else None) or self._settings.context or "last")
        meta = {"cell": cell, "source": "notebook"} if cell is not None else {"source": "notebook"}
        spec = model or (own.model if own is not None else None)
        return PhaseHandoff(tape, self.model(spec), lambda: default_pipeline().build_tape_context(tape, context), meta)

    def team(self) -> Team:
        """The notebook's agents on its tape: ``main``, those ``%agent`` defined and those its tapes record. Kept
        while the tape stays, so who holds the conversation is read only as far as the tapes grew since."""
        tape = self.tape
        if self._team is None or self._team_tape is not tape:
            self._team, self._team_tape = self.agents.team(tape), tape
        return self._team

    def holders_tape(self, agent: str | None = None) -> Tape:
        """The tape a command acts on: agent ``agent``'s, else the holder's once the notebook has agents, else the
        notebook's own. Every magic and comma command without ``--agent`` acts on this one."""
        if agent is None and not self.has_agents():
            return self.tape
        team = self.team()
        return team.tape_of(agent or team.holder() or MAIN_AGENT)

    def kernel_tools(self) -> list[Tool]:
        """``notebook.*`` and ``python.run`` over this kernel (none without a kernel)."""
        if self._kernel is None:
            return []
        return kernel_tools(self._kernel, limits=Limits())

    def run_turn(
        self, agent: Agent, prompt: str, *, on_delta: Callable[[str], None] | None, commands: bool = True
    ) -> Turn:
        """One turn of ``agent``, through the pipeline as every turn is, in this notebook's chat; with
        ``commands=False`` a prompt starting with ``,`` is text for the model, not a command (the cell's values
        made it)."""
        self.last_agent = agent
        agent.chat_id = self.chat_id()
        self.last_turn = turn = agent.run(prompt, on_delta=on_delta, commands=commands)
        return turn


def _joined(*parts: str | None) -> str | None:
    return "\n\n".join(part for part in parts if part) or None


def notebook_model(spec: str | None, namespace: Mapping[str, Any]) -> Model:
    """A model by spec (``offline``, ``openai:<model>``), or a model object named in the notebook.

    A bare name that is no notebook variable holding a model is most often a typo or a variable a
    restart lost: a name near a model variable is refused naming it, and one that cannot reach an
    endpoint is refused naming the notebook's models, instead of asking for an API key.
    """
    if not spec or not spec.isidentifier() or spec == "offline":
        return resolve_model(spec)
    named = namespace.get(spec)
    if isinstance(named, Model):
        return named
    variables = sorted(
        k for k, v in namespace.items() if isinstance(v, Model) and not isinstance(v, type) and not k.startswith("_")
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


def _no_model(spec: str, variables: list[str]) -> str:
    known = ", ".join([*variables, "offline"])
    return f"No notebook variable or known model is named {spec!r} (models: {known})"
