"""The shared pipeline that ``%%bub`` and every :class:`~bub_nb.agent.Agent` use, and adding plugins to it."""

from __future__ import annotations

import threading

from bub_nb.agent.framework import TurnPipeline
from bub_nb.agent.live_export import register_from_environment

_pipeline: TurnPipeline | None = None
_pipeline_lock = threading.Lock()

_builtin_plugin: type | None = None


def use_builtin_plugin(make: type) -> None:
    """Set the class the shared pipeline makes its builtin plugin from, passing itself.

    ``bub_nb.agent`` sets ``BuiltinPlugin`` when it is imported, which is before any of its modules is:
    the builtin plugin runs agents, so it sits above the agent loop that needs the shared pipeline.
    """
    global _builtin_plugin
    _builtin_plugin = make


def default_pipeline() -> TurnPipeline:
    """The process-wide pipeline: the builtin plugin, then entry-point plugins, live export when
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set, then registered ones."""
    global _pipeline
    with _pipeline_lock:
        if _pipeline is None:
            assert _builtin_plugin is not None, "importing bub_nb.agent sets the builtin plugin"
            _pipeline = TurnPipeline(_builtin_plugin)
            register_from_environment(_pipeline)
        return _pipeline


def shared_pipeline() -> TurnPipeline | None:
    """The process-wide pipeline if it has been made, without making it."""
    return _pipeline


def register_plugin(plugin: object, name: str | None = None) -> str:
    """Add a plugin to the shared pipeline; it runs before every plugin registered earlier.

    Registering a name again replaces that plugin.
    """
    return default_pipeline().register_plugin(plugin, name)


def unregister_plugin(name: str) -> None:
    """Remove a plugin from the shared pipeline."""
    default_pipeline().unregister_plugin(name)
