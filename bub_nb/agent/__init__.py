"""The agent layer: the turn pipeline (pluggy hooks), the agent loop, models, tools and comma commands."""

from __future__ import annotations

from bub_nb.agent import registry
from bub_nb.agent.builtin import BuiltinPlugin
from bub_nb.agent.framework import TurnPipeline, TurnResult
from bub_nb.agent.hooks import Envelope, StreamEvent, hookimpl
from bub_nb.agent.loop import Agent
from bub_nb.agent.models import Model, OfflineModel, OpenAIModel, ScriptedModel, resolve_model
from bub_nb.agent.phase_handoff import HandoffPreview
from bub_nb.agent.registry import default_pipeline, register_plugin, unregister_plugin
from bub_nb.agent.tools import Tool, ToolContext, ToolRegistry, tool
from bub_nb.agent.turn import Turn

__all__ = [
    "Agent",
    "BuiltinPlugin",
    "Envelope",
    "HandoffPreview",
    "Model",
    "OfflineModel",
    "OpenAIModel",
    "ScriptedModel",
    "StreamEvent",
    "Tool",
    "ToolContext",
    "ToolRegistry",
    "Turn",
    "TurnPipeline",
    "TurnResult",
    "default_pipeline",
    "hookimpl",
    "register_plugin",
    "resolve_model",
    "tool",
    "unregister_plugin",
]

# The shared pipeline starts from the builtin plugin, which runs agents and so sits above the registry.
registry.use_builtin_plugin(BuiltinPlugin)
