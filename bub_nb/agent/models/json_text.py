"""What a request to an endpoint may carry: JSON text the client can encode as UTF-8."""

from __future__ import annotations

import re
from typing import Any, Final

_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def sendable(value: Any) -> Any:
    """``value`` with every lone surrogate replaced (U+FFFD), so its JSON is UTF-8 the client can send.

    An endpoint may answer one as a ``\\ud800`` escape, which the tape keeps as it came; sent back unreplaced it
    would fail every later request of the tape before it left the client.
    """
    if isinstance(value, str):
        if value.isascii():
            return value
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {key: sendable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [sendable(item) for item in value]
    return value
