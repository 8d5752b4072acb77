"""Every turn option is taken the same way by ``%%bub``, ``%agent`` and ``%config``, as the one table declares it."""

from __future__ import annotations

import inspect
import shlex
from dataclasses import dataclass, fields
from typing import Any

import pytest
from harness.shell import Notebook

from bub_nb.agent import Agent
from bub_nb.agent.models.offline import OfflineModel
from bub_nb.context import parse_mode
from bub_nb.notebook.agents import AgentSettings
from bub_nb.notebook.commands.agents import AGENT_USAGE
from bub_nb.notebook.session import AgentOptions
from bub_nb.notebook.settings import MagicSettings, Settings
from bub_nb.notebook.turn_options import AGENT_SETTINGS, TURN_OPTIONS, TurnOption

OTHER = OfflineModel()  # a model object named in the notebook, told from the default one by identity


@dataclass(frozen=True)
class Sample:
    """A value of one option: as typed after its flag, as ``%config`` takes it, and what the turn's agent holds."""

    typed: str
    configured: Any
    held: Any


SAMPLES = {
    "model": Sample("other", "other", "other"),
    "instructions": Sample("Answer like a pirate", "Answer like a pirate", "Answer like a pirate"),
    "tools": Sample("tape.info", ["tape.info"], ["tape.info"]),
    "context": Sample("full", "full", parse_mode("full")),
    "budget": Sample("5000", 5000, 5000),
    "max_steps": Sample("3", 3, 3),
    "result_budget": Sample("500", 500, 500),
    "handoff_at": Sample("0.5", 0.5, 0.5),
    "embedding_model": Sample("text-embedding", "text-embedding", "text-embedding"),
}


def held(agent: Agent, option: TurnOption) -> Any:
    if option.name == "tools":
        return [name for name in agent.tools.names if not name.startswith(("notebook.", "python."))]
    if option.name == "model":
        return "other" if agent.model is OTHER else agent.model.name
    return getattr(agent, option.name)


def turn_agent(nb: Notebook, cell: str) -> Agent:
    nb.shell.user_ns["other"] = OTHER
    nb.run(cell)
    agent = nb.magics.session.last_agent
    assert agent is not None
    return agent


def test_every_turn_option_has_a_sample_so_none_goes_untested() -> None:
    assert set(SAMPLES) == {option.name for option in TURN_OPTIONS}


@pytest.mark.parametrize("option", TURN_OPTIONS, ids=lambda option: option.name)
def test_a_turn_option_reaches_the_agent_alike_from_bub_agent_and_config(nb: Notebook, option: TurnOption) -> None:
    sample = SAMPLES[option.name]
    default = held(turn_agent(nb, "%%bub\nbefore"), option)
    assert default != sample.held, f"the sample of {option.name} is its default: it shows nothing"
    routes = {}
    if option.bub:
        for flag in option.bub:
            routes[f"%%bub {flag}"] = held(turn_agent(nb, f"%%bub {flag} {shlex.quote(sample.typed)}\nhi"), option)
    if option.agent:
        for number, flag in enumerate(option.agent):
            nb.run(f"%agent a{number} {flag} {shlex.quote(sample.typed)}")
            routes[f"%agent {flag}"] = held(turn_agent(nb, f"%%bub --agent a{number}\nhi"), option)
    nb.run(f"%config BubMagics.{option.trait} = {sample.configured!r}")
    routes[f"%config BubMagics.{option.trait}"] = held(turn_agent(nb, "%%bub --agent main\nhi"), option)
    assert routes == dict.fromkeys(routes, sample.held)


def test_every_turn_option_falls_back_to_a_configurable_trait_the_session_reads() -> None:
    traits = MagicSettings.class_traits(config=True)
    for option in TURN_OPTIONS:
        assert option.trait in traits, option
        assert option.trait in Settings.__annotations__, option


def test_what_agent_sets_is_what_an_agent_keeps_and_its_usage_says() -> None:
    assert [field.name for field in fields(AgentSettings)] == ["name", *AGENT_SETTINGS]
    assert AGENT_USAGE == "%agent NAME [-m MODEL] [--instructions TEXT] [--tools a,b] [--context MODE]"


def test_the_session_passes_every_option_to_the_agent_by_the_name_it_takes() -> None:
    taken = inspect.signature(Agent.__init__).parameters
    assert {field.name for field in fields(AgentOptions)} <= set(taken)
