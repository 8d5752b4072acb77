"""How a magic refuses: bub_nb's errors become one-line ``UsageError``s, with no traceback from the internals."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar, cast

from IPython.core.error import UsageError

from bub_nb.errors import BubNbError
from bub_nb.tape.redact import error_line as one_line

__all__ = ["one_line", "usage_errors"]

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
