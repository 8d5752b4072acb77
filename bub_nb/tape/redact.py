"""Keep API keys off tapes: secrets are replaced before an entry is stored.

What is looked for: the configured API keys, anything shaped like ``sk-…``, database passwords, every secret
bub_nb was handed (an MCP server's header and ``env`` values), and the values of environment variables whose names
read as secrets (``*KEY*``, ``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, ``*CREDENTIAL*``, ``*AUTH*``...).
"""

from __future__ import annotations

import os
import re
from typing import Any

from bub_nb.tape.stores.dsn import has_secrets, redact_dsn

REDACTED = "[redacted]"
_KEY_VARIABLES = ("BUB_API_KEY", "OPENAI_API_KEY")
_KEY_PATTERN = re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}")
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|PRIVATE|AUTH", re.IGNORECASE)
MIN_SECRET = 8
"""A secret shorter than this is not looked for: it would match ordinary words."""
MIN_ENVIRONMENT_SECRET = 12
"""An environment value under a secret-looking name is redacted from this length on."""
_remembered: set[str] = set()


def secret_name(name: str) -> bool:
    """Whether a variable or header called ``name`` reads as holding a secret (a key, a token, a password...)."""
    return bool(_SECRET_NAME.search(name))


def remember_secret(*values: str) -> None:
    """Add ``values`` (a header or ``env`` value bub_nb was handed) to what every tape entry is redacted for."""
    _remembered.update(value for value in values if isinstance(value, str) and len(value.strip()) >= MIN_SECRET)


def _known_keys() -> list[str]:
    """The configured API keys, the secrets bub_nb was handed, and the environment's values under names that read
    as secrets (``GITHUB_TOKEN``, ``AWS_SECRET_ACCESS_KEY``...), longest first."""
    keys = {value for name in _KEY_VARIABLES if len(value := os.environ.get(name, "")) >= MIN_SECRET}
    keys |= _environment_secrets()
    keys |= _remembered
    return sorted(keys, key=len, reverse=True)


_environment_seen: list[Any] = [None, frozenset()]


def _environment_secrets() -> frozenset[str]:
    """The environment's values under secret-looking names, worked out again only when the environment changed
    (every entry stored asks, and decoding the whole environment each time is most of an append's cost)."""
    raw = getattr(os.environ, "_data", None)
    snapshot = tuple(raw.items()) if isinstance(raw, dict) else tuple(os.environ.items())
    if snapshot != _environment_seen[0]:
        found = frozenset(
            value
            for name, value in os.environ.items()
            if len(value) >= MIN_ENVIRONMENT_SECRET and secret_name(name) and not value.isdigit()
        )
        _environment_seen[:] = [snapshot, found]
    return _environment_seen[1]  # type: ignore[no-any-return]


def error_line(exc: BaseException) -> str:
    """The first line of an error, with any API key an endpoint echoed in it scrubbed out: what a magic's refusal
    or a protocol's error message shows, both of which are saved where keys must not be."""
    text = str(exc).strip()
    return redact_text(text.splitlines()[0] if text else type(exc).__name__)


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
