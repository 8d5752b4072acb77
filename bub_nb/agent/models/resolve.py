"""Turn a model spec (``offline``, ``openai:<model>``, a bare model name) into a model."""

from __future__ import annotations

import hashlib
import os
import threading
from typing import Any
from urllib.parse import urlsplit

from bub_nb.agent.models.base import Model
from bub_nb.agent.models.offline import OfflineModel
from bub_nb.agent.models.openai_model import OpenAIModel
from bub_nb.errors import ModelConfigError

__all__ = ["ACCEPTED_FORMS", "resolve_model"]

ACCEPTED_FORMS = (
    "'offline', 'openai:<model>' (for example 'openai:gpt-4o-mini' or 'openai:qwen2.5:7b' for "
    "an Ollama tag), or a bare model name without a colon (for example 'gpt-4o-mini')"
)
KEY_VARIABLES = ("BUB_API_KEY", "OPENAI_API_KEY")
BASE_VARIABLES = ("BUB_API_BASE", "OPENAI_BASE_URL")
_LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "0.0.0.0"}
# Local servers (Ollama, llama.cpp, vLLM) ignore the key, but the openai client insists on one.
_LOCAL_PLACEHOLDER_KEY = "no-key-needed-for-a-local-server"


def _env(names: tuple[str, ...]) -> str | None:
    return next((value for name in names if (value := os.environ.get(name, "").strip())), None)


def _is_local(base_url: str | None) -> bool:
    return bool(base_url) and (urlsplit(str(base_url)).hostname or "") in _LOCAL_HOSTS


def resolve_model(spec: str | Model | None = None, **options: Any) -> Model:
    """The model for ``spec``; None reads ``BUB_MODEL`` and falls back on ``offline``.

    ``options`` go to the model's constructor (``context_window`` for offline; ``api_key``,
    ``base_url``, ``timeout``, ``max_retries`` for OpenAI endpoints). An OpenAI model takes its key
    from ``BUB_API_KEY`` or ``OPENAI_API_KEY`` and its base URL from ``BUB_API_BASE`` or
    ``OPENAI_BASE_URL``; a server on localhost needs no key.
    """
    if spec is not None and not isinstance(spec, str):
        if isinstance(spec, Model):
            return spec
        raise ModelConfigError(f"Cannot use {spec!r} as a model; give a model object or one of {ACCEPTED_FORMS}")
    text = (spec if spec is not None else os.environ.get("BUB_MODEL", "")).strip() or "offline"
    if text == "offline":
        return OfflineModel(**options)
    if text == "offline:echo":  # what each message holds, instead of counts
        return OfflineModel(echo=True, **options)
    prefix, colon, rest = text.partition(":")
    if not colon:
        return _openai(text, text, options)
    if prefix == "openai" and rest.strip():
        return _openai(rest.strip(), text, options)
    raise ModelConfigError(f"Unknown model spec {text!r}; use {ACCEPTED_FORMS}")


def _openai(model: str, spec: str, options: dict[str, Any]) -> OpenAIModel:
    options = dict(options)
    base_url = options.pop("base_url", None) or _env(BASE_VARIABLES)
    api_key = options.pop("api_key", None) or _env(KEY_VARIABLES)
    if api_key is None:
        if not _is_local(base_url):
            where = f"the endpoint {base_url}" if base_url else "the OpenAI API"
            raise ModelConfigError(
                f"Model {spec!r} needs an API key for {where}: set {' or '.join(KEY_VARIABLES)}, "
                f"or point {' or '.join(BASE_VARIABLES)} at a local server (http://localhost:11434/v1 for Ollama)"
            )
        api_key = _LOCAL_PLACEHOLDER_KEY
    # One model per endpoint and settings, so its HTTP client and connections are reused by every agent.
    key = (model, hashlib.sha256(api_key.encode()).hexdigest(), base_url, tuple(sorted(options.items())))
    with _models_lock:
        found = _models.get(key)
        if found is None:
            found = _models[key] = OpenAIModel(model, api_key=api_key, base_url=base_url, **options)
        return found


_models: dict[tuple[Any, ...], OpenAIModel] = {}
_models_lock = threading.Lock()
