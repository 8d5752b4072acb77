"""Finding a value by the name a model gives (``df``, ``df.columns``, ``data["train"][0]``) without ``eval``.

Only names, attribute access and subscripts with literal keys are read from the expression, with
``ast``; then the value is looked up with ``getattr`` and ``[]``. Nothing else in the text runs, and no step
reaches into the process environment (``os.environ``), whose values are keys and tokens.
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Mapping
from typing import Any

from bub_nb.errors import ToolError

_ALLOWED = "a name, .attribute and [key] with literal keys, like df.columns or data['train'][0]"


def parse_name(expression: str) -> ast.expr:
    """The expression's tree, refused unless it is only names, attributes and literal subscripts."""
    text = expression.strip()
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError:
        raise ToolError(f"{expression!r} is not {_ALLOWED}") from None
    _check(tree, expression)
    return tree


def resolve(expression: str, namespace: Mapping[str, Any]) -> Any:
    """The value ``expression`` names in ``namespace``; a :class:`ToolError` saying what is missing otherwise."""
    return _value(parse_name(expression), namespace, expression)


def _check(node: ast.AST, expression: str) -> None:
    match node:
        case ast.Name():
            return
        case ast.Attribute(value=inner, attr=attr):
            if attr.startswith("__"):
                raise ToolError(f"{expression!r} reaches the special attribute {attr!r}; ask for a public one")
            _check(inner, expression)
        case ast.Subscript(value=inner, slice=key):
            _check(inner, expression)
            _literal(key, expression)
        case _:
            raise ToolError(f"{expression!r} is not {_ALLOWED}")


def _literal(node: ast.AST, expression: str) -> Any:
    match node:
        case ast.Constant(value=value) if isinstance(value, str | int | float | bool | bytes) or value is None:
            return value
        case ast.UnaryOp(op=ast.USub(), operand=ast.Constant(value=int() | float() as number)):
            return -number
        case ast.Tuple(elts=items):
            return tuple(_literal(item, expression) for item in items)
        case ast.List(elts=items):
            return [_literal(item, expression) for item in items]
        case ast.Slice(lower=lower, upper=upper, step=step):
            parts = [_literal(part, expression) if part is not None else None for part in (lower, upper, step)]
            return slice(*parts)
        case _:
            raise ToolError(f"{expression!r} has a key that is not a literal; {_ALLOWED} works")


def _value(node: ast.expr, namespace: Mapping[str, Any], expression: str) -> Any:
    value = _step(node, namespace, expression)
    if _is_environment(value):
        raise ToolError(
            f"{ast.unparse(node)!r} is the process environment, which the kernel tools do not read: it holds "
            "keys and tokens; ask the user for the one setting you need"
        )
    return value


def _is_environment(value: Any) -> bool:
    """Whether ``value`` is the process environment (``os.environ``, ``os.environb``, however it was reached)."""
    import os

    return value is os.environ or value is os.environb or isinstance(value, type(os.environ))


def _step(node: ast.expr, namespace: Mapping[str, Any], expression: str) -> Any:
    match node:
        case ast.Name(id=name):
            if name not in namespace:
                close = difflib.get_close_matches(name, [str(key) for key in namespace], n=3)
                hint = f"; did you mean {', '.join(close)}?" if close else "; notebook.vars lists what is defined"
                raise ToolError(f"{name!r} is not defined in the notebook{hint}")
            return namespace[name]
        case ast.Attribute(value=inner, attr=attr):
            base = _value(inner, namespace, expression)
            try:
                return getattr(base, attr)
            except Exception as exc:
                raise ToolError(f"{ast.unparse(node)!r} cannot be read: {type(exc).__name__}: {exc}") from None
        case ast.Subscript(value=inner, slice=key):
            base = _value(inner, namespace, expression)
            try:
                return base[_literal(key, expression)]
            except Exception as exc:
                raise ToolError(f"{ast.unparse(node)!r} cannot be read: {type(exc).__name__}: {exc}") from None
    raise ToolError(f"{expression!r} is not {_ALLOWED}")
