"""Database addresses: telling a DSN from a tape name, and never showing its password (no driver needed)."""

from __future__ import annotations

import re

SCHEMES = ("postgresql://", "postgres://")
_URL_PASSWORD = re.compile(r"\b([a-z][a-z0-9+.-]*://[^:/@\s]*):[^@\s]*@", re.IGNORECASE)
_KEYWORD_PASSWORD = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)
_QUERY_PASSWORD = re.compile(r"([?&]password=)[^&\s]*", re.IGNORECASE)


def is_dsn(value: object) -> bool:
    """Whether ``value`` names a PostgreSQL database rather than a folder or a tape."""
    return isinstance(value, str) and value.strip().lower().startswith(SCHEMES)


def redact_dsn(text: str) -> str:
    """``text`` with every password in a URL (``scheme://user:password@``) or ``password=`` keyword replaced."""
    if "://" in text:
        text = _URL_PASSWORD.sub(r"\1:[redacted]@", text)
        text = _QUERY_PASSWORD.sub(r"\1[redacted]", text)
    if "password" in text.lower():
        text = _KEYWORD_PASSWORD.sub(r"\1[redacted]", text)
    return text


def error_reason(error: BaseException) -> str:
    """One line saying why, with any password taken out."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return redact_dsn(text)
