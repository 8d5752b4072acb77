"""Keep API keys off tapes: secrets are replaced before an entry is stored."""

from __future__ import annotations

import os
import re
from typing import Any

from bub_nb.tape.stores.dsn import has_secrets, redact_dsn

REDACTED = "[redacted]"
_KEY_VARIABLES = ("BUB_API_KEY", "OPENAI_API_KEY")
_KEY_PATTERN = re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}")


def _known_keys() -> list[str]:
    return [value for name in _KEY_VARIABLES if len(value := os.environ.get(name, "")) >= 8]


def redact_text(text: str, keys: list[str] | None = None) -> str:
    """``text`` with API keys (the configured ones and anything shaped like ``sk-…``) replaced."""
    for key in _known_keys() if keys is None else keys:
        if key in text:
            text = text.replace(key, REDACTED)
    if "sk-" in text:
        text = _KEY_PATTERN.sub(REDACTED, text)
    if has_secrets(text):  # database passwords: in DSNs, password= keywords, or of a DSN in use
        text = redact_dsn(text)
    return text


def redact(value: Any, keys: list[str] | None = None) -> Any:
    """A copy of ``value`` with every string redacted; ``value`` itself when nothing changed."""
    keys = _known_keys() if keys is None else keys
    if isinstance(value, str):
        return redact_text(value, keys)
    if isinstance(value, dict):
        pairs = [(redact(k, keys), redact(v, keys)) for k, v in value.items()]
        unchanged = all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(pairs, value.items(), strict=True))
        return value if unchanged else dict(pairs)
    if isinstance(value, list | tuple):
        items_list = [redact(v, keys) for v in value]
        return value if all(a is b for a, b in zip(items_list, value, strict=True)) else items_list
    return value
