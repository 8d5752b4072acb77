"""The model ``-m NAME`` means in a notebook: a model variable, ``offline``, or an endpoint's model."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from bub_nb.agent.models import Model, resolve_model
from bub_nb.errors import ModelConfigError


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
