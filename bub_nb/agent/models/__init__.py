"""Models the agent talks to: OpenAI-compatible endpoints, the offline teaching model, scripted replies, and the
embedding model recall may rank by."""

from __future__ import annotations

from bub_nb.agent.models.base import Completion, Model, TextDelta, ToolCall, Usage
from bub_nb.agent.models.embeddings import Embeddings
from bub_nb.agent.models.offline import OfflineModel
from bub_nb.agent.models.openai_model import CONTEXT_LENGTH_PATTERNS, OpenAIModel, is_context_length_error
from bub_nb.agent.models.resolve import resolve_model
from bub_nb.agent.models.scripted import ModelRequest, ScriptedModel
from bub_nb.agent.models.vectors import VectorCache

__all__ = [
    "CONTEXT_LENGTH_PATTERNS",
    "Completion",
    "Embeddings",
    "Model",
    "ModelRequest",
    "OfflineModel",
    "OpenAIModel",
    "ScriptedModel",
    "TextDelta",
    "ToolCall",
    "Usage",
    "VectorCache",
    "is_context_length_error",
    "resolve_model",
]
