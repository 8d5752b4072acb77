"""The notebook's variables as a short table: name, type, shape or length, approximate size."""

from __future__ import annotations

import sys
import types
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from bub_nb.agent.kernel_tools.limits import call_within, type_name

MAX_VARIABLES = 200
SECONDS_PER_VARIABLE = 0.5


@dataclass(frozen=True, slots=True)
class Variable:
    """One row of ``notebook.vars``."""

    name: str
    type: str
    size: str
    bytes: int | None

    def line(self) -> str:
        memory = f", ≈{_human(self.bytes)}" if self.bytes is not None else ""
        return f"- {self.name}: {self.type}{f' {self.size}' if self.size else ''}{memory}"


def users_names(namespace: Mapping[str, Any], hidden: Collection[str] = ()) -> list[str]:
    """The names a person defined: no modules, no ``_private`` names, none the shell put there itself."""
    return [
        name
        for name, value in list(namespace.items())
        if isinstance(name, str)
        and not name.startswith("_")
        and name not in hidden
        and not isinstance(value, types.ModuleType)
    ]


def variable(name: str, value: Any) -> Variable:
    """The row of one value; its size and shape are asked for within a time limit."""
    outcome = call_within(lambda: (_size(value), _bytes(value)), SECONDS_PER_VARIABLE)
    size, nbytes = outcome.value if outcome.ok and outcome.value is not None else ("", None)
    return Variable(name, type_name(value), size, nbytes)


def variables_text(namespace: Mapping[str, Any], hidden: Collection[str] = ()) -> str:
    """``notebook.vars``: one line per variable, sorted by name, at most :data:`MAX_VARIABLES`."""
    names = sorted(users_names(namespace, hidden))
    if not names:
        return "(no variables are defined in the notebook yet)"
    lines = [variable(name, namespace[name]).line() for name in names[:MAX_VARIABLES]]
    if len(names) > MAX_VARIABLES:
        lines.append(f"… and {len(names) - MAX_VARIABLES:,} more (ask notebook.inspect about one by name)")
    return f"{len(names)} variables:\n" + "\n".join(lines)


def _size(value: Any) -> str:
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple) and not isinstance(value, type):
        if len(shape) == 1:
            return f"{shape[0]:,} values"
        return "×".join(str(part) for part in shape) if shape else "scalar"
    if isinstance(value, str | bytes | bytearray | list | tuple | dict | set | frozenset):
        return f"len {len(value):,}"
    return ""


def _bytes(value: Any) -> int | None:
    usage = getattr(value, "memory_usage", None)
    if callable(usage) and type(value).__module__.startswith("pandas"):
        total = usage(deep=False)
        return int(total.sum()) if hasattr(total, "sum") else int(total)
    nbytes = getattr(value, "nbytes", None)
    if isinstance(nbytes, int) and not isinstance(value, type):
        return nbytes
    return sys.getsizeof(value)


def _human(count: int) -> str:
    size = float(count)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{count} B"
