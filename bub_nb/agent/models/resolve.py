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

__all__ = ["ACCEPTED_FORMS", "MODEL_VARIABLES", "model_setting", "resolve_model"]

ACCEPTED_FORMS = (
    "'offline', 'openai:<model>' (for example 'openai:gpt-4o-mini' or 'openai:qwen2.5:7b' for "
    "an Ollama tag), or a bare model name without a colon (for example 'gpt-4o-mini')"
)
MODEL_VARIABLES = ("BUB_NB_MODEL", "BUB_MODEL")
"""Where the model spec is read: bub_nb's own setting first, then the one it shares with Bub. Bub cannot read
``offline`` (``bub run`` fails on it), so bub_nb writes only ``BUB_NB_MODEL``; ``BUB_MODEL=offline`` still reads."""
BUB_PROVIDER_NAMES = frozenset(
    (  # noqa: SIM905
        "anthropic atlascloud azure azureanthropic azureopenai bedrock cascadia cerebras cohere dashscope "
        "databricks deepinfra deepseek edenai fireworks gemini github gmi groq huggingface inception kenari "
        "liner llama llamacpp llamafile lmstudio meta minimax mistral moonshot mzai nebius neosantara ollama "
        "openrouter otari perplexity portkey qiniu requesty sagemaker sambanova telnyx together typesafe "
        "vertexai vertexaianthropic vllm voyage watsonx xai zai "
    ).split()
)
"""The providers Bub 0.5.1 names (any-llm 1.40's, as Bub installs it), ``openai`` apart."""
BUB_PROVIDERS = {"openrouter": "https://openrouter.ai/api/v1"}
"""Bub's providers (``<provider>:<model>``, any-llm's names) with an OpenAI-compatible endpoint of their own."""
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
    setting = None if spec is not None else model_setting()
    text = (spec if spec is not None else (setting[1] if setting else "")).strip() or "offline"
    if text == "offline":
        return OfflineModel(**options)
    if text == "offline:echo":  # what each message holds, instead of counts
        return OfflineModel(echo=True, **options)
    prefix, colon, rest = text.partition(":")
    if not colon:
        return _openai(text, text, options)
    if prefix == "openai" and rest.strip():
        return _openai(rest.strip(), text, options)
    if prefix in BUB_PROVIDER_NAMES and rest.strip():  # Bub's spelling, ``<provider>:<model>``
        return _bub_provider(prefix, rest.strip(), text, setting[0] if setting else None, options)
    raise ModelConfigError(f"Unknown model spec {text!r}; use {ACCEPTED_FORMS}")


def model_setting() -> tuple[str, str] | None:
    """The variable the model spec comes from and its value, when one is set."""
    return next(((name, value) for name in MODEL_VARIABLES if (value := os.environ.get(name, "").strip())), None)


def _bub_provider(provider: str, model: str, spec: str, variable: str | None, options: dict[str, Any]) -> OpenAIModel:
    """Bub's ``<provider>:<model>``: ``model`` at the provider's OpenAI-compatible endpoint, which is
    ``BUB_<PROVIDER>_API_BASE`` or ``BUB_API_BASE`` when set (Bub's own variables), else the provider's known one;
    its key is ``BUB_<PROVIDER>_API_KEY``, else the usual ones. A provider with no such endpoint is refused."""
    upper = provider.upper()
    base_url = options.pop("base_url", None) or _env((f"BUB_{upper}_API_BASE", *BASE_VARIABLES))
    base_url = base_url or BUB_PROVIDERS.get(provider)
    if base_url is None:
        where = f"{variable}={spec!r}" if variable else f"Model {spec!r}"
        raise ModelConfigError(
            f"{where} names Bub's provider {provider!r}, which bub_nb reaches only through an OpenAI-compatible "
            f"endpoint: set BUB_{upper}_API_BASE or BUB_API_BASE to one, or set BUB_NB_MODEL to {ACCEPTED_FORMS}"
        )
    api_key = options.pop("api_key", None) or _env((f"BUB_{upper}_API_KEY", *KEY_VARIABLES))
    return _openai(model, spec, {**options, "base_url": base_url, "api_key": api_key})


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
