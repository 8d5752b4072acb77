"""How a magic refuses: bub_nb's errors become one-line ``UsageError``s, with no traceback from the internals."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar, cast

from IPython.core.error import UsageError

from bub_nb.errors import BubNbError
from bub_nb.tape.redact import redact_text

Method = TypeVar("Method", bound=Callable[..., Any])


def usage_errors(method: Method) -> Method:
    """Turn bub_nb's errors into one-line ``UsageError``s: no traceback from the internals.

    Only errors bub_nb raises on purpose are converted (and the magics raise ``UsageError`` for their own
    parse errors); any other exception is a bug and keeps its traceback.
    """

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except BubNbError as exc:
            raise UsageError(one_line(exc)) from None

    return cast(Method, wrapper)


def one_line(exc: BaseException) -> str:
    """The first line of an error, with any API key an endpoint echoed scrubbed out (outputs are saved)."""
    text = str(exc).strip()
    return redact_text(text.splitlines()[0] if text else type(exc).__name__)
