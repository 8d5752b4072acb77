"""Database addresses: telling a DSN from a tape name, and never showing its password (no driver needed).

A password may hold anything: spaces, ``@``, ``:``, ``/``, ``%``, quotes, any script. In a URL
everything between ``user:`` and the last ``@`` of the line counts as the password, so one with an
unencoded ``@`` or a space is hidden whole. Each DSN a store is opened with is also remembered, so its
password (as typed, and percent-decoded) is taken out of any text, wherever it turns up.
"""

from __future__ import annotations

import os
import re
import threading
from urllib.parse import quote, unquote

SCHEMES = ("postgresql://", "postgres://")
REDACTED = "[redacted]"
_MIN_REMEMBERED = 6  # shorter secrets are hidden where they stand in a DSN, not in every word of a text
# An already redacted password is left as it is, so a later '@' on the line (an archive's stamp) stays.
_URL_PASSWORD = re.compile(r"\b([a-z][a-z0-9+.-]*://[^:/@\s]*):(?!\[redacted\]@)([^\n]*)@", re.IGNORECASE)
_KEYWORD_PASSWORD = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\\n]|\\.)*'?|\S+)", re.IGNORECASE)
_QUERY_PASSWORD = re.compile(r"([?&]password=)[^&#\n]*", re.IGNORECASE)
_USERINFO = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=:")
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
_QUOTED = re.compile(r'"([^"\n]*)"')
_remembered: set[str] = set()
DSN_UNPARSED = (
    "the DSN cannot be parsed (in a URL, a password with spaces, '@', ':', '/' or '%' must be percent-encoded; "
    "in key=value form, quoted)"
)
_lock = threading.Lock()


def is_dsn(value: object) -> bool:
    """Whether ``value`` names a PostgreSQL database rather than a folder or a tape."""
    return isinstance(value, str) and value.strip().lower().startswith(SCHEMES)


def unencoded_password(dsn: str) -> str | None:
    """Which characters of a URL's password must be percent-encoded to be read as typed, or ``None``.

    libpq ends the password at the first ``@`` or ``/`` and refuses spaces; what follows would be read
    as the host, the port or the database, and quoted back in its errors.
    """
    match = _URL_PASSWORD.match(dsn.strip())
    if match is None:
        return None
    password = match.group(2)
    bad = sorted({c for c in _PERCENT.sub("", password) if c.isascii() and c not in _USERINFO})
    return "".join(bad) or None


def dsn_secrets(dsn: str) -> set[str]:
    """The passwords ``dsn`` carries, in every form they may be shown in (as typed, decoded, encoded)."""
    found: set[str] = set()
    for match in _URL_PASSWORD.finditer(dsn):
        found.add(match.group(2))
    for match in _QUERY_PASSWORD.finditer(dsn):
        found.add(match.group(0)[len(match.group(1)) :])
    for match in _KEYWORD_PASSWORD.finditer(dsn):
        value = match.group(2)
        if value.startswith("'"):
            value = re.sub(r"\\(.)", r"\1", value.strip("'"))
        found.add(value)
    every = set(found)
    for secret in found:
        every |= {unquote(secret), quote(secret, safe=""), quote(unquote(secret), safe="")}
    return {secret for secret in every if secret.strip()}


def remember_dsn_secrets(dsn: str) -> None:
    """Take the passwords of ``dsn`` out of every text ``redact_dsn`` sees from now on."""
    secrets = {secret for secret in dsn_secrets(dsn) if len(secret) >= _MIN_REMEMBERED}
    if secrets - _remembered:
        with _lock:
            _remembered.update(secrets)


_seen_environment: list[str | None] = [None]


def _environment_store() -> None:
    store = os.environ.get("BUB_STORE")
    if store != _seen_environment[0]:  # once per value: this runs for every string a tape stores
        _seen_environment[0] = store
        if store and is_dsn(store):
            remember_dsn_secrets(store)


def has_secrets(text: str) -> bool:
    """Whether ``text`` may hold a database password (a DSN, a ``password=`` or a remembered one)."""
    _environment_store()
    lowered = text.lower()
    return "://" in text or "password" in lowered or any(secret in text for secret in list(_remembered))


def redact_dsn(text: str) -> str:
    """``text`` with every password in a URL (``scheme://user:password@``) or ``password=`` keyword replaced."""
    _environment_store()
    for secret in sorted(_remembered, key=len, reverse=True):  # the longest first: one may hold another
        if secret in text:
            text = text.replace(secret, REDACTED)
    if "://" in text:
        text = _URL_PASSWORD.sub(rf"\1:{REDACTED}@", text)
        text = _QUERY_PASSWORD.sub(rf"\1{REDACTED}", text)
    if "password" in text.lower():
        text = _KEYWORD_PASSWORD.sub(rf"\1{REDACTED}", text)
    return text


def error_reason(error: BaseException) -> str:
    """One line saying why, with any password taken out. A DSN libpq cannot parse is not quoted back,
    since what it would quote is part of the password."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    if text.startswith(("invalid dsn", "invalid connection option", 'missing "="', "unterminated quoted")) or (
        "connection info string" in text or "invalid URI" in text or "invalid percent-encoded" in text
    ):
        return DSN_UNPARSED
    return _quoted_fragments(redact_dsn(text))


def _quoted_fragments(text: str) -> str:
    """A quoted piece of a remembered password (libpq quotes what it could not parse) replaced too."""
    if '"' not in text or not _remembered:
        return text
    secrets = list(_remembered)
    return _QUOTED.sub(
        lambda match: (
            f'"{REDACTED}"'
            if len(match.group(1)) >= 3 and any(match.group(1) in s for s in secrets)
            else match.group(0)
        ),
        text,
    )
