"""Fill ``{name}``, ``{obj.attr}`` and ``{seq[0]}`` in a cell from the user's namespace, evaluating nothing else."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from bub_nb.errors import InterpolationError

# A placeholder is a name followed by attribute or index steps, with an optional conversion and
# format spec. Braces around anything else (a dict literal, a code sample) are left as they are.
_PLACEHOLDER = re.compile(
    r"\{\{|\}\}|\{(?P<field>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*|\[[^\[\]{}]+\])*)(?:!(?P<conv>[rsa]))?(?::(?P<spec>[^{}]*))?\}"
)
_STEP = re.compile(r"\.(?P<attr>[A-Za-z_]\w*)|\[(?P<key>[^\]]+)\]")


def _resolve(field: str, namespace: Mapping[str, Any]) -> Any:
    name = re.match(r"[A-Za-z_]\w*", field).group(0)  # type: ignore[union-attr]
    if name not in namespace:
        raise InterpolationError(f"{{{field}}}: name {name!r} is not defined in the notebook; write {{{{ for a brace")
    value = namespace[name]
    for step in _STEP.finditer(field, len(name)):
        if step["attr"] is not None:
            attr = step["attr"]
            if attr.startswith("_"):
                raise InterpolationError(f"{{{field}}}: private attribute {attr!r} is not interpolated")
            try:
                value = getattr(value, attr)
            except AttributeError:
                raise InterpolationError(f"{{{field}}}: {type(value).__name__} has no attribute {attr!r}") from None
            except Exception as exc:  # the user's own property failed; say so in one line
                raise InterpolationError(f"{{{field}}}: reading {attr!r} raised {type(exc).__name__}: {exc}") from None
        else:
            key: Any = step["key"].strip()
            if re.fullmatch(r"-?\d+", key):
                key = int(key)
            elif len(key) >= 2 and key[0] == key[-1] and key[0] in "'\"":
                key = key[1:-1]
            try:
                value = value[key]
            except Exception as exc:  # a missing key, or the user's own __getitem__ failing
                problem = f"{type(exc).__name__}: {exc}"
                raise InterpolationError(f"{{{field}}}: cannot take [{step['key']}] ({problem})") from None
    return value


def interpolate(text: str, namespace: Mapping[str, Any], *, quote: Callable[[str], str] | None = None) -> str:
    """Replace placeholders with values from ``namespace``; ``{{`` and ``}}`` become literal braces.

    ``quote`` wraps each filled-in value (``shlex.quote`` for a command the user typed, so a value is one word of
    it and never adds an option).
    """

    def replace(match: re.Match[str]) -> str:
        token = match.group(0)
        if token in ("{{", "}}"):
            return token[0]
        value = _resolve(match["field"], namespace)
        conv = match["conv"]
        try:
            if conv == "r":
                value = repr(value)
            elif conv == "a":
                value = ascii(value)
            filled = format(value, match["spec"] or "")
        except (TypeError, ValueError) as exc:
            raise InterpolationError(f"{token}: bad format spec ({exc})") from None
        except Exception as exc:  # the value's own __repr__ or __format__ failed
            raise InterpolationError(f"{token}: formatting raised {type(exc).__name__}: {exc}") from None
        return filled if quote is None else quote(filled)

    return _PLACEHOLDER.sub(replace, text)
