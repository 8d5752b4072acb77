"""A safe, bounded description of one value, by its type, for a model to read.

Every step that runs a value's own code goes through :func:`call_within`, so a ``__repr__`` that
sleeps or raises costs at most the time limit and shows up as a sentence in the description.
"""

from __future__ import annotations

import inspect
import sys
import types
from collections.abc import Callable
from typing import Any

from bub_nb.agent.kernel_tools.limits import Limits, call_within, safe_repr, shorten, type_name

SAMPLE = 8
DOC_LINES = 12
COLUMNS = 60


def describe_value(value: Any, name: str, limits: Limits | None = None) -> str:
    """``name``'s value described by its type: frames and arrays with their shape and statistics,
    containers with a sample, text with its start, code with its signature and docstring."""
    limits = limits or Limits()
    for check, describe in _DESCRIBERS:
        if check(value):
            return "\n".join(describe(value, name, limits))
    return "\n".join(_other(value, name, limits))


def _section(title: str, text: Callable[[], str], limits: Limits) -> list[str]:
    outcome = call_within(text, limits.seconds)
    if not outcome.ok:
        return [f"{title}: (not available: {outcome.error})"]
    return [f"{title}:", shorten(str(outcome.value), limits.chars * 2)]


def _is(module: str, *names: str) -> Callable[[Any], bool]:
    def check(value: Any) -> bool:
        kind = type(value)
        # Only a library already imported can have made the value: no import happens here.
        return module in sys.modules and any(
            klass.__name__ in names and (klass.__module__ or "").startswith(module) for klass in kind.__mro__
        )

    return check


def _frame(frame: Any, name: str, limits: Limits) -> list[str]:
    rows, columns = frame.shape
    lines = [f"`{name}` is a pandas DataFrame: {rows:,} rows × {columns:,} columns{_memory(frame, limits)}."]
    nulls = call_within(lambda: frame.isna().sum(), limits.seconds)
    column_lines = []
    for position, column in enumerate(frame.columns[:COLUMNS]):
        missing = nulls.value.iloc[position] if nulls.ok and nulls.value is not None else None
        note = f", {missing:,} null" if missing else ""
        column_lines.append(f"- {column!s}: {frame.dtypes.iloc[position]}{note}")
    if columns > COLUMNS:
        column_lines.append(f"- … and {columns - COLUMNS:,} more columns")
    lines += ["Columns (dtype, nulls):", *column_lines]
    lines += _section("head(5)", lambda: frame.head(5).to_string(max_cols=12, max_colwidth=40), limits)
    numeric = call_within(lambda: frame.select_dtypes("number").shape[1], limits.seconds)
    if numeric.ok and numeric.value:
        lines += _section("describe() of the numeric columns", lambda: frame.describe().to_string(max_cols=12), limits)
    return lines


def _series(series: Any, name: str, limits: Limits) -> list[str]:
    nulls = call_within(lambda: int(series.isna().sum()), limits.seconds)
    missing = f", {nulls.value:,} null" if nulls.ok and nulls.value else ""
    values = f"{len(series):,} values of dtype {series.dtype}{missing}"
    lines = [f"`{name}` is a pandas Series named {series.name!r}: {values}."]
    lines += _section("head(5)", lambda: series.head(5).to_string(max_rows=5), limits)
    if getattr(series.dtype, "kind", "") in "iufcb":
        lines += _section("describe()", lambda: series.describe().to_string(), limits)
    return lines


def _array(array: Any, name: str, limits: Limits) -> list[str]:
    import numpy

    lines = [f"`{name}` is a numpy ndarray: shape {array.shape}, dtype {array.dtype}, {array.nbytes:,} bytes."]
    values = call_within(
        lambda: numpy.array2string(array, threshold=20, edgeitems=3, max_line_width=100), limits.seconds
    )
    lines.append(f"values: {shorten(values.value, limits.chars)}" if values.ok and values.value else "")
    if array.size and array.dtype.kind in "iuf":

        def statistics() -> str:
            flat = array.astype(float, copy=False)
            functions = (("min", numpy.nanmin), ("max", numpy.nanmax), ("mean", numpy.nanmean), ("std", numpy.nanstd))
            found = [f"{label} {function(flat):.6g}" for label, function in functions]
            missing = int(numpy.isnan(flat).sum())
            return ", ".join(found) + (f", {missing:,} NaN" if missing else "")

        stats = call_within(statistics, limits.seconds)
        lines.append(f"statistics: {stats.value}" if stats.ok else f"statistics: (not available: {stats.error})")
    return [line for line in lines if line]


def _mapping(mapping: Any, name: str, limits: Limits) -> list[str]:
    short = Limits(limits.seconds, max(limits.chars // 8, 80))
    lines = [f"`{name}` is a {type_name(mapping)} of {len(mapping):,} items."]
    items = call_within(lambda: list(mapping.items())[:SAMPLE], limits.seconds)
    if not items.ok or items.value is None:
        return [*lines, f"(its items cannot be read: {items.error})"]
    lines += [f"- {safe_repr(key, short)}: {safe_repr(item, short)}" for key, item in items.value]
    if len(mapping) > SAMPLE:
        lines.append(f"- … and {len(mapping) - SAMPLE:,} more")
    return lines


def _collection(collection: Any, name: str, limits: Limits) -> list[str]:
    short = Limits(limits.seconds, max(limits.chars // 8, 80))
    sample = call_within(lambda: [item for _, item in zip(range(SAMPLE), collection, strict=False)], limits.seconds)
    kinds = sorted({type_name(item) for item in sample.value or ()})
    of = f" ({', '.join(kinds)}{' …' if len(collection) > SAMPLE else ''})" if kinds else ""
    lines = [f"`{name}` is a {type_name(collection)} of {len(collection):,} items{of}."]
    lines += [f"- {safe_repr(item, short)}" for item in sample.value or ()]
    if len(collection) > SAMPLE:
        lines.append(f"- … and {len(collection) - SAMPLE:,} more")
    return lines


def _text(text: str | bytes | bytearray, name: str, limits: Limits) -> list[str]:
    unit = "characters" if isinstance(text, str) else "bytes"
    start = text[: limits.chars]
    more = " (the start)" if len(text) > limits.chars else ""
    return [f"`{name}` is a {type_name(text)} of {len(text):,} {unit}{more}:", repr(start)]


def _code(value: Any, name: str, limits: Limits) -> list[str]:
    kind = "class" if inspect.isclass(value) else "function"
    try:
        signature = str(inspect.signature(value))
    except (TypeError, ValueError):
        signature = "(…)"
    where = getattr(value, "__module__", None)
    title = f"`{name}` is a {kind} {getattr(value, '__qualname__', name)}{signature}"
    lines = [title + (f" from {where}." if where else ".")]
    doc = inspect.getdoc(value) or ""
    if doc:
        kept = doc.splitlines()[:DOC_LINES]
        lines += ["Docstring:", shorten("\n".join(kept), limits.chars)]
    if kind == "class":
        bases = ", ".join(base.__qualname__ for base in value.__mro__[1:-1][:5])
        public = [member for member in vars(value) if not member.startswith("_")][:20]
        lines += [f"Bases: {bases}"] if bases else []
        lines += [f"Public attributes: {', '.join(public)}"] if public else []
    return lines


def _module(module: types.ModuleType, name: str, limits: Limits) -> list[str]:
    file = getattr(module, "__file__", None) or "(built in)"
    doc = (inspect.getdoc(module) or "").strip().splitlines()
    lines = [f"`{name}` is the module {module.__name__}, from {file}."]
    return lines + ([f"Docstring: {shorten(doc[0], limits.chars)}"] if doc else [])


def _other(value: Any, name: str, limits: Limits) -> list[str]:
    lines = [f"`{name}` is a {type_name(value)}{_shape(value, limits)}.", f"repr: {safe_repr(value, limits)}"]
    doc = inspect.getdoc(type(value)) if type(value).__module__ != "builtins" else None
    if doc:
        lines.append(f"Its class says: {shorten(doc.splitlines()[0], 200)}")
    return lines


def _shape(value: Any, limits: Limits) -> str:
    def measure() -> str:
        shape = getattr(value, "shape", None)
        if isinstance(shape, tuple):
            return f" of shape {shape}"
        return f" of length {len(value):,}" if hasattr(type(value), "__len__") else ""

    outcome = call_within(measure, limits.seconds)
    return outcome.value or "" if outcome.ok else ""


def _memory(frame: Any, limits: Limits) -> str:
    outcome = call_within(lambda: int(frame.memory_usage(deep=False).sum()), limits.seconds)
    return f", about {outcome.value:,} bytes" if outcome.ok else ""


def _is_text(value: Any) -> bool:
    return isinstance(value, str | bytes | bytearray)


def _is_mapping(value: Any) -> bool:
    return isinstance(value, dict)


def _is_collection(value: Any) -> bool:
    return isinstance(value, list | tuple | set | frozenset)


def _is_code(value: Any) -> bool:
    return inspect.isclass(value) or inspect.isroutine(value)


_DESCRIBERS: list[tuple[Callable[[Any], bool], Callable[[Any, str, Limits], list[str]]]] = [
    (_is("pandas", "DataFrame"), _frame),
    (_is("pandas", "Series"), _series),
    (_is("numpy", "ndarray"), _array),
    (_is_text, _text),
    (_is_mapping, _mapping),
    (_is_collection, _collection),
    (inspect.ismodule, _module),
    (_is_code, _code),
]
