"""The named agents a notebook defined with ``%agent``: each one's own settings, over the magics' settings."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

from bub_nb.agent.team import Team
from bub_nb.errors import AgentError
from bub_nb.notebook.turn_options import AGENT_SETTINGS
from bub_nb.tape.names import MAIN_AGENT, check_agent_name

if TYPE_CHECKING:
    from bub_nb.tape import Tape


@dataclass(frozen=True, slots=True)
class AgentSettings:
    """What ``%agent NAME`` set for one agent; ``None`` falls back to the cell's option, then ``BubMagics``."""

    name: str
    model: str | None = None
    instructions: str | None = None
    tools: str | None = None
    context: str | None = None


_SETTINGS = AGENT_SETTINGS  # what %agent sets, as the table of turn options says


class NotebookAgents:
    """The agents of this notebook by name, in the order they were defined. ``main`` is the unnamed agent: it
    is always there and takes its settings from ``BubMagics``. Each definition is recorded on the agent's own tape
    (an ``agent`` event), so a kernel that starts later over the same tapes has the same agents."""

    def __init__(self) -> None:
        self._settings: dict[str, AgentSettings] = {}

    def __bool__(self) -> bool:
        return bool(self._settings)

    def define(self, settings: AgentSettings) -> AgentSettings:
        """Add an agent, or change the settings given again (the others stay)."""
        if check_agent_name(settings.name) == MAIN_AGENT:
            raise AgentError(f"{MAIN_AGENT!r} is the notebook's unnamed agent; its settings are BubMagics'")
        earlier = self._settings.get(settings.name)
        if earlier is not None:
            given = {key: getattr(settings, key) for key in _SETTINGS}
            settings = replace(earlier, **{key: value for key, value in given.items() if value is not None})
        self._settings[settings.name] = settings
        return settings

    def get(self, name: str) -> AgentSettings | None:
        return self._settings.get(name)

    @property
    def names(self) -> list[str]:
        return list(self._settings)

    def record(self, team: Team, settings: AgentSettings, meta: dict[str, Any]) -> AgentSettings:
        """:meth:`define` the agent and record it on its tape, unless that changes nothing already recorded."""
        earlier = self._settings.get(settings.name)
        defined = self.define(settings)
        if defined != earlier or team.recorded(defined.name) is None:
            values = asdict(defined)
            team.define(defined.name, {key: values[key] for key in _SETTINGS}, meta)
        return defined

    def load(self, team: Team) -> None:
        """Take in every agent of ``team`` that was not defined here: with the settings its tape records."""
        for name in team.names:
            if name == MAIN_AGENT or name in self._settings:
                continue
            recorded = team.recorded(name) or {}
            self._settings[name] = AgentSettings(name, **{key: recorded.get(key) for key in _SETTINGS})

    def team(self, tape: Tape) -> Team:
        """The team on the notebook's tape: ``main``, every agent defined here and every agent its tapes record."""
        team = Team(tape, self._settings)
        self.load(team)
        return team
