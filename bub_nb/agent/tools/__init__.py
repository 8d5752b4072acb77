"""Tools: what the model may call, made from plain functions, and the builtin ``tape.*`` and ``memory.*`` tools."""

from __future__ import annotations

from bub_nb.agent.tools.builtin import BUILTIN_TOOLS, OPT_IN, agent_registry, builtin_registry, model_builtins
from bub_nb.agent.tools.registry import Tool, ToolCallError, ToolContext, ToolRegistry, tool
from bub_nb.agent.tools.signatures import parameters_schema, parse_docstring

__all__ = [
    "BUILTIN_TOOLS",
    "OPT_IN",
    "Tool",
    "ToolCallError",
    "ToolContext",
    "ToolRegistry",
    "agent_registry",
    "builtin_registry",
    "model_builtins",
    "parameters_schema",
    "parse_docstring",
    "tool",
]
