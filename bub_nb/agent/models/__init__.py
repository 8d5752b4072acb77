"""Models the agent talks to: OpenAI-compatible endpoints, the offline teaching model, scripted replies."""

from __future__ import annotations

from bub_nb.agent.models.base import Completion, Model, TextDelta, ToolCall, Usage
from bub_nb.agent.models.offline import OfflineModel
from bub_nb.agent.models.openai_model import CONTEXT_LENGTH_PATTERNS, OpenAIModel, is_context_length_error
from bub_nb.agent.models.resolve import resolve_model
from bub_nb.agent.models.scripted import ModelRequest, ScriptedModel

__all__ = [
    "CONTEXT_LENGTH_PATTERNS",
    "Completion",
    "Model",
    "ModelRequest",
    "OfflineModel",
    "OpenAIModel",
    "ScriptedModel",
    "TextDelta",
    "ToolCall",
    "Usage",
    "is_context_length_error",
    "resolve_model",
]
